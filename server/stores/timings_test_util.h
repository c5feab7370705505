// ClearTimings: for tests that compare two stores' descriptions or snapshots, which may differ
// only in how long something took. Test-only.
#ifndef ADAPTD_SERVER_STORES_TIMINGS_TEST_UTIL_H_
#define ADAPTD_SERVER_STORES_TIMINGS_TEST_UTIL_H_

#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace adaptd {

// Clears the fields that time something (named *_seconds), which two equal stores need not
// share, anywhere in `message`.
inline void ClearTimings(google::protobuf::Message* message) {
  const google::protobuf::Reflection* r = message->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(*message, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    const std::string& name = f->name();
    if (name.size() > 8 && name.compare(name.size() - 8, 8, "_seconds") == 0) {
      r->ClearField(message, f);
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE &&
               !f->is_repeated()) {
      ClearTimings(r->MutableMessage(message, f));
    }
  }
}

}  // namespace adaptd

#endif  // ADAPTD_SERVER_STORES_TIMINGS_TEST_UTIL_H_
