//===- PluginFingerprint.h - What of the plugins a kernel depends on -*- C++
//-*-===//
//
// te_compiler_plugins and te_compiler_program_plugins (te/JIT/Compiler.h)
// report what of the loaded plugins changes generated code, and kernel
// caches key their entries on it: each available plugin's name and version
// in priority order, the dispatch settings, and how the plugins came to be
// (those loaded through te_compiler_load_plugins, those that failed). The
// compiler encodes it and the cache decodes it, both through this struct,
// so that no side takes the text apart by hand.
//
// The text: "<name>=<version>;" per plugin, then
// "policy=<p>;deny=<d>;strict=<0|1>;api=<spec>,...;failed=<spec>,...;".
// A '%', ';', ',' or '=' inside a value is written %XX, so that a plugin
// path or name holding them cannot pass for another field.
//
// Plain C++: no MLIR, LLVM or runtime types (te/ABI's rule).
//
//===----------------------------------------------------------------------===//

#ifndef TE_ABI_PLUGINFINGERPRINT_H
#define TE_ABI_PLUGINFINGERPRINT_H

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace te::abi {

struct PluginFingerprint {
  struct Plugin {
    std::string name, version;
    bool operator==(const Plugin &other) const {
      return name == other.name && version == other.version;
    }
  };
  /// The available and active plugins, in priority order.
  std::vector<Plugin> plugins;
  /// NVTE_PLUGIN_POLICY and NVTE_PLUGIN_DENY as set ("" when unset).
  std::string policy, deny;
  /// NVTE_PLUGIN_STRICT.
  bool strict = false;
  /// The specs loaded through te_compiler_load_plugins, and those that
  /// failed (to load or to activate), in list order.
  std::vector<std::string> api, failed;

  bool operator==(const PluginFingerprint &other) const {
    return plugins == other.plugins && policy == other.policy &&
           deny == other.deny && strict == other.strict && api == other.api &&
           failed == other.failed;
  }

  std::string encode() const {
    std::string text;
    for (const Plugin &plugin : plugins)
      text += escape(plugin.name) + "=" + escape(plugin.version) + ";";
    text += "policy=" + escape(policy) + ";deny=" + escape(deny) +
            ";strict=" + (strict ? "1" : "0") + ";api=" + join(api) +
            ";failed=" + join(failed) + ";";
    return text;
  }

  /// `text` (encode's) into `out`; false with `*error` saying what is
  /// wrong otherwise.
  static bool decode(std::string_view text, PluginFingerprint &out,
                     std::string *error) {
    auto fail = [&](const std::string &why) {
      if (error)
        *error = "plugin fingerprint " + quote(text) + ": " + why;
      return false;
    };
    if (text.empty() || text.back() != ';')
      return fail("expected fields ending in ';'");
    // Keys unescaped, values as written (a list splits before unescaping).
    std::vector<std::pair<std::string, std::string_view>> fields;
    for (size_t start = 0; start < text.size();) {
      size_t end = text.find(';', start);
      std::string_view field = text.substr(start, end - start);
      size_t equals = field.find('=');
      std::string key;
      if (equals == std::string_view::npos)
        return fail("field " + quote(field) + " is not key=value");
      if (!unescape(field.substr(0, equals), key))
        return fail("field " + quote(field) + " has a malformed %XX escape");
      fields.emplace_back(std::move(key), field.substr(equals + 1));
      start = end + 1;
    }
    // The last five fields are the settings, whatever the plugins are named.
    static const char *const kSettings[] = {"policy", "deny", "strict", "api",
                                            "failed"};
    if (fields.size() < 5)
      return fail("expected the fields policy, deny, strict, api and failed");
    size_t first = fields.size() - 5;
    for (size_t i = 0; i < 5; ++i)
      if (fields[first + i].first != kSettings[i])
        return fail("expected field '" + std::string(kSettings[i]) +
                    "' where '" + fields[first + i].first + "' is");
    PluginFingerprint result;
    std::string strict;
    bool ok = true;
    for (size_t i = 0; i < first; ++i) {
      Plugin plugin{fields[i].first, ""};
      ok = ok && unescape(fields[i].second, plugin.version);
      result.plugins.push_back(std::move(plugin));
    }
    ok = ok && unescape(fields[first].second, result.policy) &&
         unescape(fields[first + 1].second, result.deny) &&
         unescape(fields[first + 2].second, strict) &&
         splitList(fields[first + 3].second, result.api) &&
         splitList(fields[first + 4].second, result.failed);
    if (!ok)
      return fail("a value has a malformed %XX escape");
    if (strict != "0" && strict != "1")
      return fail("strict is '" + strict + "', expected 0 or 1");
    result.strict = strict == "1";
    out = std::move(result);
    return true;
  }

private:
  static bool isSpecial(char c) {
    return c == '%' || c == ';' || c == ',' || c == '=';
  }

  static std::string escape(const std::string &value) {
    std::string text;
    for (char c : value) {
      if (!isSpecial(c)) {
        text += c;
        continue;
      }
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", static_cast<unsigned char>(c));
      text += hex;
    }
    return text;
  }

  static bool unescape(std::string_view text, std::string &out) {
    out.clear();
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '%') {
        out += text[i];
        continue;
      }
      if (i + 2 >= text.size())
        return false;
      int value = 0;
      for (size_t j = i + 1; j <= i + 2; ++j) {
        char c = text[j];
        int digit = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
        if (digit < 0)
          return false;
        value = value * 16 + digit;
      }
      out += static_cast<char>(value);
      i += 2;
    }
    return true;
  }

  static std::string join(const std::vector<std::string> &values) {
    std::string text;
    for (size_t i = 0; i < values.size(); ++i)
      text += (i ? "," : "") + escape(values[i]);
    return text;
  }

  /// A list's comma-separated values, each unescaped.
  static bool splitList(std::string_view raw, std::vector<std::string> &out) {
    out.clear();
    if (raw.empty())
      return true;
    for (size_t start = 0;;) {
      size_t end = raw.find(',', start);
      std::string value;
      if (!unescape(raw.substr(start, end - start), value))
        return false;
      out.push_back(std::move(value));
      if (end == std::string_view::npos)
        return true;
      start = end + 1;
    }
  }

  static std::string quote(std::string_view text) {
    constexpr size_t kMaxShown = 80;
    if (text.size() <= kMaxShown)
      return "'" + std::string(text) + "'";
    return "'" + std::string(text.substr(0, kMaxShown)) + "...'";
  }
};

} // namespace te::abi

#endif // TE_ABI_PLUGINFINGERPRINT_H
