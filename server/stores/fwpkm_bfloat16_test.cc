// The bfloat16 conversions of fwpkm's value table (fwpkm_values.h) bit for bit: round to
// nearest, ties to even in both directions and with either sign, carries into the exponent,
// overflow of the largest finite values to infinity, infinities, NaNs that stay NaN (a NaN
// whose payload lies only in the dropped bits must not become an infinity), subnormals, and
// every bfloat16 value round-tripping exactly.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "server/stores/fwpkm_values.h"

namespace adaptd {
namespace {

uint16_t ToBf16(uint32_t float_bits) { return FwpkmToBfloat16(std::bit_cast<float>(float_bits)); }
uint32_t FromBf16(uint16_t h) { return std::bit_cast<uint32_t>(FwpkmFromBfloat16(h)); }
bool IsNanBits16(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }

TEST(Bfloat16, ExactBitPatterns) {
  struct Case {
    uint32_t in;
    uint16_t want;
    const char* what;
  };
  const Case cases[] = {
      {0x3F800000u, 0x3F80u, "1.0 is exact"},
      {0x3F808000u, 0x3F80u, "tie above 1.0: down to the even 0x3F80"},
      {0x3F818000u, 0x3F82u, "tie above an odd value: up to the even 0x3F82"},
      {0x3F807FFFu, 0x3F80u, "just under a tie: down"},
      {0x3F808001u, 0x3F81u, "just over a tie: up"},
      {0xBF808000u, 0xBF80u, "negative tie, even below: towards zero"},
      {0xBF818000u, 0xBF82u, "negative tie, odd below: away from zero"},
      {0x3FFF8000u, 0x4000u, "tie at 2 - ulp/2 carries into the exponent: 2.0"},
      {0x7F7F0000u, 0x7F7Fu, "the largest finite bfloat16 is exact"},
      {0x7F7F7FFFu, 0x7F7Fu, "under the tie above the largest finite: stays finite"},
      {0x7F7F8000u, 0x7F80u, "the tie above the largest finite (odd): overflows to +inf"},
      {0x7F7FFFFFu, 0x7F80u, "FLT_MAX rounds to +inf"},
      {0xFF7FFFFFu, 0xFF80u, "-FLT_MAX rounds to -inf"},
      {0x7F800000u, 0x7F80u, "+inf"},
      {0xFF800000u, 0xFF80u, "-inf"},
      {0x00000000u, 0x0000u, "+0"},
      {0x80000000u, 0x8000u, "-0 keeps its sign"},
      {0x00000001u, 0x0000u, "the smallest subnormal rounds to +0"},
      {0x00008000u, 0x0000u, "subnormal tie, even below: +0"},
      {0x00018000u, 0x0002u, "subnormal tie, odd below: up"},
      {0x807F8000u, 0x8080u, "negative tie at the largest subnormal: to the smallest normal"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ToBf16(c.in), c.want) << std::hex << "0x" << c.in << ": " << c.what;
  }
}

TEST(Bfloat16, NansStayNan) {
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7F807FFFu,
                        0x7FFFFFFFu, 0x7FBFFFFFu}) {
    const uint16_t h = ToBf16(bits);
    EXPECT_TRUE(IsNanBits16(h)) << std::hex << "0x" << bits << " -> 0x" << h;
    EXPECT_EQ(h & 0x8000u, (bits >> 16) & 0x8000u) << std::hex << "sign of 0x" << bits;
    EXPECT_TRUE(std::isnan(FwpkmFromBfloat16(h)));
  }
  EXPECT_TRUE(IsNanBits16(FwpkmToBfloat16(std::numeric_limits<float>::quiet_NaN())));
}

// Every exact tie between two adjacent finite bfloat16 values goes to the even one.
TEST(Bfloat16, EveryTieGoesToEven) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    if ((h & 0x7F80u) == 0x7F80u) continue;  // inf and NaN have no tie above them
    const uint32_t tie = (h << 16) | 0x8000u;
    const uint32_t up = (h & 0x7FFFu) + 1;  // the next magnitude (0x7F80 is inf)
    const uint16_t want = static_cast<uint16_t>((h & 1u) == 0 ? h : ((h & 0x8000u) | up));
    ASSERT_EQ(ToBf16(tie), want) << std::hex << "tie 0x" << tie;
  }
}

// Against the definition: of the two bfloat16 neighbours, the nearer (in double); at equal
// distance, the even one.
TEST(Bfloat16, RandomFloatsRoundToTheNearest) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng();
    if ((bits & 0x7F800000u) == 0x7F800000u) continue;
    const uint16_t lo = static_cast<uint16_t>(bits >> 16);
    const uint16_t hi = static_cast<uint16_t>((lo & 0x8000u) | ((lo & 0x7FFFu) + 1));
    const double x = std::bit_cast<float>(bits);
    const double dlo = std::abs(x - FwpkmFromBfloat16(lo));
    // hi may be an infinity: compare against the value it stands for, 2^128.
    const double hi_value =
        (hi & 0x7FFFu) == 0x7F80u ? std::copysign(std::ldexp(1.0, 128), x) : FwpkmFromBfloat16(hi);
    const double dhi = std::abs(x - hi_value);
    const uint16_t want = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1u) == 0 ? lo : hi);
    ASSERT_EQ(ToBf16(bits), want) << std::hex << "0x" << bits;
  }
}

TEST(Bfloat16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    EXPECT_EQ(FromBf16(v), h << 16);
    if (IsNanBits16(v)) {
      EXPECT_TRUE(IsNanBits16(FwpkmToBfloat16(FwpkmFromBfloat16(v))));
    } else {
      ASSERT_EQ(FwpkmToBfloat16(FwpkmFromBfloat16(v)), v) << std::hex << "0x" << h;
    }
  }
  EXPECT_EQ(FwpkmFromBfloat16(0x7F7Fu), 3.38953139e38f);  // the largest finite bfloat16
}

}  // namespace
}  // namespace adaptd
