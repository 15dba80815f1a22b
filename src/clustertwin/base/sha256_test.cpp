#include "clustertwin/base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace clustertwin::base {
namespace {

// The digest's vectors are tested through calibration::sha256_hex (calibration/sha256_test.cpp);
// here the raw digest and base64 (RFC 4648 section 10 vectors).
TEST(Sha256, RawDigestMatchesTheHex) {
  const auto d = sha256("abc");
  EXPECT_EQ(d[0], 0xba);
  EXPECT_EQ(d[31], 0xad);
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Base64, Rfc4648Vectors) {
  auto b64 = [](std::string_view s) {
    return base64({reinterpret_cast<const unsigned char*>(s.data()), s.size()});
  };
  EXPECT_EQ(b64(""), "");
  EXPECT_EQ(b64("f"), "Zg==");
  EXPECT_EQ(b64("fo"), "Zm8=");
  EXPECT_EQ(b64("foo"), "Zm9v");
  EXPECT_EQ(b64("foob"), "Zm9vYg==");
  EXPECT_EQ(b64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(b64("foobar"), "Zm9vYmFy");
  // The CSP source of an empty script: 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='.
  const auto e = sha256("");
  EXPECT_EQ(base64(e), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

}  // namespace
}  // namespace clustertwin::base
