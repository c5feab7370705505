// The image decoders and preprocessing against Pillow's decode and numpy's preprocessing of
// it (testdata/make_image_cases.py, run once per test process with Debian's python3-pil): PNG
// decodes exactly as Pillow does, JPEG within kJpegTolerance per 8-bit value (both use
// libjpeg-turbo; the bound allows another build's IDCT), preprocessing within float rounding.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/image/image_decode.h"
#include "server/encoders/image/image_preprocess.h"

namespace adaptd {
namespace {

using ::testing::HasSubstr;

constexpr int kJpegTolerance = 2;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class ImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One folder per process: ctest runs the tests of this binary as parallel processes.
    dir_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) /
                                     ("image_cases_" + std::to_string(::getpid())));
    const std::string command =
        std::string(ADAPTD_PYTHON3) + " " + ADAPTD_IMAGE_CASES_SCRIPT + " " + dir_->string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    cases_ = new nlohmann::json(nlohmann::json::parse(ReadFile(*dir_ / "cases.json")));
  }
  static std::string Bytes(const std::string& name) { return ReadFile(*dir_ / name); }
  static absl::StatusOr<RgbImage> Decode(const std::string& name, ImageLimits limits = {}) {
    return DecodeImage(Bytes(name), limits);
  }

  static inline std::filesystem::path* dir_ = nullptr;
  static inline nlohmann::json* cases_ = nullptr;
};

TEST_F(ImageTest, DecodesAsPillowDoes) {
  ASSERT_GE((*cases_)["decoded"].size(), 17u);
  for (const auto& c : (*cases_)["decoded"]) {
    const std::string name = c["file"];
    SCOPED_TRACE(name);
    absl::StatusOr<RgbImage> image = Decode(name);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->width, c["width"].get<int64_t>());
    EXPECT_EQ(image->height, c["height"].get<int64_t>());
    const std::string want = Bytes(name + ".rgb");
    ASSERT_EQ(image->pixels.size(), want.size());
    int worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::abs(image->pixels[i] - static_cast<uint8_t>(want[i])));
    }
    if (name.ends_with(".png")) {
      EXPECT_EQ(worst, 0);
    } else {
      EXPECT_LE(worst, kJpegTolerance);
    }
  }
}

TEST_F(ImageTest, ExifOrientationTurnsTheImage) {
  absl::StatusOr<RgbImage> upright = Decode("exif1.jpg");
  ASSERT_TRUE(upright.ok());
  for (int orientation = 2; orientation <= 8; ++orientation) {
    absl::StatusOr<RgbImage> turned = Decode(absl::StrCat("exif", orientation, ".jpg"));
    ASSERT_TRUE(turned.ok()) << turned.status();
    const bool swaps = orientation >= 5;
    EXPECT_EQ(turned->width, swaps ? upright->height : upright->width) << orientation;
    EXPECT_EQ(turned->pixels, Orient(*upright, orientation).pixels) << orientation;
  }
  EXPECT_EQ(ExifOrientation("Exif"), 1);
  EXPECT_EQ(ExifOrientation(std::string("Exif\0\0MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01"
                                        "\0\x06\0\0",
                                        28)),
            6);
  EXPECT_EQ(ExifOrientation(std::string("Exif\0\0II\x2a\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0"
                                        "\0\0\x09\0\0\0",
                                        28)),
            1);  // 9 is no orientation
}

TEST_F(ImageTest, RefusesBombsTruncatedAndGarbageNamingTheReason) {
  const std::vector<std::pair<std::string, std::string>> want = {
      {"bomb.png", "100000x100000 has a side over the limit of 8192"},
      {"wide.png", "9000x1 has a side over the limit"},
      {"bomb.jpg", "60000x60000 has a side over the limit"},
      {"truncated.png", "PNG: "},
      {"truncated.jpg", "JPEG: "},
      {"header_only.jpg", "JPEG: "},
      {"garbage.bin", "not a PNG or JPEG image"},
      {"garbage.png", "PNG: "},
      {"garbage.jpg", "JPEG: "},
      {"cmyk.jpg", "CMYK"},
      {"empty.png", "empty image"},
  };
  ASSERT_EQ(want.size(), (*cases_)["refused"].size());
  for (const auto& [name, message] : want) {
    absl::StatusOr<RgbImage> image = Decode(name);
    ASSERT_FALSE(image.ok()) << name;
    EXPECT_EQ(image.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(image.status().message(), HasSubstr(message)) << name;
  }
  EXPECT_THAT(Decode("truncated.png").status().message(), HasSubstr("truncated"));
  EXPECT_THAT(Decode("truncated.jpg").status().message(), HasSubstr("end"));
}

TEST_F(ImageTest, LimitsAreTheConfiguredOnes) {
  EXPECT_TRUE(
      Decode("rgb.png", {.max_encoded_bytes = 1 << 20, .max_side = 37, .max_pixels = 851}).ok());
  EXPECT_THAT(Decode("rgb.png", {.max_side = 36}).status().message(),
              HasSubstr("37x23 has a side over the limit of 36"));
  EXPECT_THAT(Decode("rgb.jpg", {.max_pixels = 850}).status().message(),
              HasSubstr("37x23 is 851 pixels, over the limit of 850"));
  const std::string png = Bytes("rgb.png");
  EXPECT_THAT(DecodeImage(png, {.max_encoded_bytes = png.size() - 1}).status().message(),
              HasSubstr(absl::StrCat("image of ", png.size(), " bytes, over the limit")));
}

ImagePreprocess FromCase(const nlohmann::json& config) {
  ImagePreprocess p;
  if (config.contains("shorter")) {
    p.resize = ImagePreprocess::Resize::kShorterSide;
    p.shorter_side = config["shorter"];
  } else if (config.contains("resize")) {
    p.resize = ImagePreprocess::Resize::kExact;
    p.resize_to = {config["resize"][0], config["resize"][1]};
  }
  if (config.contains("crop")) p.crop = {config["crop"][0], config["crop"][1]};
  p.bgr = config.value("bgr", false);
  p.nhwc = config.value("nhwc", false);
  p.scale = config.value("scale", 1.0f / 255.0f);
  if (config.contains("mean")) p.mean = config["mean"].get<std::array<float, 3>>();
  if (config.contains("std")) p.std = config["std"].get<std::array<float, 3>>();
  return p;
}

TEST_F(ImageTest, PreprocessesAsNumpyDoes) {
  ASSERT_GE((*cases_)["preprocessed"].size(), 6u);
  for (const auto& c : (*cases_)["preprocessed"]) {
    SCOPED_TRACE(c.dump());
    absl::StatusOr<RgbImage> image = Decode(c["file"]);
    ASSERT_TRUE(image.ok());
    const ImageSize size{c["width"], c["height"]};
    const std::string want = Bytes(c["expected"]);
    ASSERT_EQ(want.size(), static_cast<size_t>(size.width * size.height * 3) * sizeof(float));
    std::vector<float> got(want.size() / sizeof(float));
    ASSERT_TRUE(PreprocessImage(*image, FromCase(c["config"]), size, got.data()).ok());
    for (size_t i = 0; i < got.size(); ++i) {
      float expected;
      std::memcpy(&expected, want.data() + i * sizeof(float), sizeof(float));
      ASSERT_NEAR(got[i], expected, 1e-6 * std::max(1.0f, std::abs(expected))) << i;
    }
  }
}

TEST_F(ImageTest, PreprocessingRefusesAnImageSmallerThanTheCropOrNotTheModelsSize) {
  absl::StatusOr<RgbImage> image = Decode("gray.png");  // 16x12
  ASSERT_TRUE(image.ok());
  std::vector<float> out(3 * 64);
  ImagePreprocess crop;
  crop.crop = {8, 16};
  EXPECT_THAT(PreprocessImage(*image, crop, {8, 16}, out.data()).message(),
              HasSubstr("the image is 16x12 after its resize, smaller than the crop 8x16"));
  ImagePreprocess shorter;
  shorter.resize = ImagePreprocess::Resize::kShorterSide;
  shorter.shorter_side = 8;
  EXPECT_THAT(PreprocessImage(*image, shorter, {8, 8}, out.data()).message(),
              HasSubstr("the image is 10x8 after its preprocessing (from 16x12); the model takes "
                        "8x8"));
  shorter.crop = {8, 8};
  EXPECT_TRUE(PreprocessImage(*image, shorter, {8, 8}, out.data()).ok());
}

}  // namespace
}  // namespace adaptd
