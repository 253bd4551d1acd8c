//===- PluginFingerprintTest.cpp - The plugins' part of cache keys --------===//
//
// The compiler encodes the plugin fingerprint and the kernel cache decodes
// it (te/ABI/PluginFingerprint.h): the text is what te_compiler_plugins
// has always said for ordinary names and paths, every value survives the
// round trip, and no value can pass for another field.
//
//===----------------------------------------------------------------------===//

#include "te/ABI/PluginFingerprint.h"

#include <gtest/gtest.h>

using te::abi::PluginFingerprint;

namespace {

PluginFingerprint roundTrip(const PluginFingerprint &fingerprint) {
  PluginFingerprint decoded;
  std::string error;
  EXPECT_TRUE(PluginFingerprint::decode(fingerprint.encode(), decoded, &error))
      << error;
  return decoded;
}

TEST(PluginFingerprint, TheTextOfOrdinaryValues) {
  PluginFingerprint none;
  EXPECT_EQ(none.encode(), "policy=;deny=;strict=0;api=;failed=;");
  PluginFingerprint two;
  two.plugins = {{"fixture", "1.0"}, {"second", "2.1"}};
  two.policy = "plugin-first";
  two.deny = "fixture:te.amax";
  two.strict = true;
  two.api = {"/lib/a.so", "/lib/b.so"};
  two.failed = {"/lib/b.so"};
  EXPECT_EQ(two.encode(),
            "fixture=1.0;second=2.1;policy=plugin-first;deny=fixture:te.amax;"
            "strict=1;api=/lib/a.so,/lib/b.so;failed=/lib/b.so;");
  EXPECT_EQ(roundTrip(none), none);
  EXPECT_EQ(roundTrip(two), two);
}

// A ';', ',', '=' or '%' in a value is escaped: a plugin path that holds
// ";failed=;" does not end the fingerprint as a clean load would, and a
// plugin named like a setting stays a plugin.
TEST(PluginFingerprint, ValuesCannotPassForFields) {
  PluginFingerprint tricky;
  tricky.plugins = {{"policy", "1;deny=x"}, {"a=b", "100%"}};
  tricky.api = {"/tmp/x;failed=;", "/lib/with,comma.so"};
  std::string text = tricky.encode();
  EXPECT_EQ(text.find(";failed=;"), text.size() - 9)
      << "only the real field ends with ;failed=;: " << text;
  EXPECT_EQ(text.rfind("failed=;"), text.size() - 8);
  PluginFingerprint decoded = roundTrip(tricky);
  EXPECT_EQ(decoded, tricky);
  EXPECT_EQ(decoded.api.size(), 2u);
  EXPECT_TRUE(decoded.failed.empty());
}

TEST(PluginFingerprint, MalformedTextIsRefusedWithTheReason) {
  struct Case {
    const char *text, *reason;
  };
  const Case cases[] = {
      {"", "expected fields ending in ';'"},
      {"policy=;deny=;strict=0;api=;failed=", "expected fields ending in ';'"},
      {"policy=;deny=;strict=0;api=;", "expected the fields policy, deny"},
      {"policy=;deny=;strict=0;failed=;api=;", "expected field 'api' where"},
      {"policy=;deny=;strict=2;api=;failed=;", "strict is '2'"},
      {"noequals;policy=;deny=;strict=0;api=;failed=;", "is not key=value"},
      {"policy=%G1;deny=;strict=0;api=;failed=;", "malformed %XX escape"},
      {"policy=;deny=;strict=0;api=a%2;failed=;", "malformed %XX escape"},
  };
  for (const Case &c : cases) {
    PluginFingerprint decoded;
    std::string error;
    EXPECT_FALSE(PluginFingerprint::decode(c.text, decoded, &error)) << c.text;
    EXPECT_NE(error.find(c.reason), std::string::npos)
        << c.text << ": " << error;
  }
}

} // namespace
