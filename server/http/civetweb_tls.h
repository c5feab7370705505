// Makes Debian 12's civetweb (1.15) serve TLS with OpenSSL 3. That civetweb opens OpenSSL at run
// time and looks its functions up by name into a table; one it calls on every TLS connection,
// SSL_get_peer_certificate, is SSL_get1_peer_certificate in OpenSSL 3 (the old name is a macro
// there, no symbol), so its entry stays null and the first connection crashes the process.
// RepairCivetwebTls finds that entry in the loaded civetweb's writable data (its name's
// string, then the null pointer after it) and fills it with SSL_get1_peer_certificate, the
// same function under its new name. A civetweb whose entry is filled, or that has no such
// table, is left alone. Call once civetweb has loaded OpenSSL (mg_init_library with TLS) and
// before it serves. Not thread-safe.
#ifndef ADAPTD_SERVER_HTTP_CIVETWEB_TLS_H_
#define ADAPTD_SERVER_HTTP_CIVETWEB_TLS_H_

#include "absl/status/status.h"

namespace adaptd::http {

// OK once civetweb's entry is usable (filled here, or already); FAILED_PRECONDITION when
// civetweb could not load OpenSSL, or the entry is null and its layout not the one known, so
// that TLS is refused at start-up rather than crash.
absl::Status RepairCivetwebTls();

}  // namespace adaptd::http

#endif  // ADAPTD_SERVER_HTTP_CIVETWEB_TLS_H_
