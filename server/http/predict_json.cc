#include "server/http/predict_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace adaptd::http {
namespace {

// A cursor over the body; every step false when the body is not of the shape.
class Reader {
 public:
  explicit Reader(absl::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool Peek(char c) {
    Space();
    return p_ < end_ && *p_ == c;
  }
  bool AtEnd() {
    Space();
    return p_ == end_;
  }
  // A string without escapes or control characters (those are the mapping's to read).
  bool String(absl::string_view* out) {
    if (!Eat('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      // Escapes, control characters and UTF-8 beyond ASCII (which the mapping checks).
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    *out = absl::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }
  // A whole number without fraction or exponent (other forms are the mapping's).
  bool Unsigned(uint64_t* out) {
    Space();
    auto [next, error] = std::from_chars(p_, end_, *out);
    if (error != std::errc() || next == p_) return false;
    if (next < end_ && (*next == '.' || *next == 'e' || *next == 'E')) return false;
    p_ = next;
    return true;
  }
  // A JSON number (not a quoted one, nor NaN or Infinity), as a double.
  bool Number(double* out) {
    Space();
    if (p_ == end_ || !(*p_ == '-' || (*p_ >= '0' && *p_ <= '9'))) return false;
    auto [next, error] = std::from_chars(p_, end_, *out);
    if (error != std::errc() || !std::isfinite(*out)) return false;
    // A negative zero: the mapping reads "-0" as the integer 0, "-0.0" as -0.0.
    if (*out == 0 && *p_ == '-') return false;
    p_ = next;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

// Calls `member(key)` for each key of an object, which reads the value.
template <typename Member>
bool Object(Reader& r, Member member) {
  if (!r.Eat('{')) return false;
  if (r.Eat('}')) return true;
  do {
    absl::string_view key;
    if (!r.String(&key) || !r.Eat(':') || !member(key)) return false;
  } while (r.Eat(','));
  return r.Eat('}');
}

// Calls `element()` for each element of an array, which reads it.
template <typename Element>
bool Array(Reader& r, Element element) {
  if (!r.Eat('[')) return false;
  if (r.Eat(']')) return true;
  do {
    if (!element()) return false;
  } while (r.Eat(','));
  return r.Eat(']');
}

bool Values(Reader& r, adapt::v1::FloatVector* vector) {
  bool seen = false;
  return Object(r, [&](absl::string_view key) {
    if (key != "values" || seen) return false;
    seen = true;
    return Array(r, [&] {
      double v = 0;
      // As the mapping: a float field refuses a finite double past float's range.
      if (!r.Number(&v) || std::fabs(v) > std::numeric_limits<float>::max()) return false;
      vector->add_values(static_cast<float>(v));
      return true;
    });
  });
}

bool Input(Reader& r, adapt::v1::Input* input) {
  bool seen = false;
  return Object(r, [&](absl::string_view key) {
    if (key != "vector" || seen) return false;
    seen = true;
    return Values(r, input->mutable_vector());
  });
}

}  // namespace

bool ReadPredictJson(absl::string_view json, adapt::v1::PredictRequest* request) {
  Reader r(json);
  bool tenant = false, store = false, top_k = false, inputs = false;
  const bool read = Object(r, [&](absl::string_view key) {
    absl::string_view text;
    if (key == "tenant" && !tenant) {
      tenant = true;
      if (!r.String(&text)) return false;
      request->set_tenant(std::string(text));
      return true;
    }
    if (key == "store" && !store) {
      store = true;
      if (!r.String(&text)) return false;
      request->set_store(std::string(text));
      return true;
    }
    if (key == "top_k" && !top_k) {
      top_k = true;
      uint64_t k = 0;
      if (!r.Unsigned(&k) || k > std::numeric_limits<uint32_t>::max()) return false;
      request->set_top_k(static_cast<uint32_t>(k));
      return true;
    }
    if (key == "inputs" && !inputs) {
      inputs = true;
      return Array(r, [&] { return Input(r, request->add_inputs()); });
    }
    return false;
  });
  return read && r.AtEnd();
}

}  // namespace adaptd::http
