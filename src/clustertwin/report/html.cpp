#include "clustertwin/report/html.h"

#include <array>
#include <cctype>
#include <span>
#include <string>

#include "clustertwin/base/sha256.h"
#include "clustertwin/base/text.h"
#include "clustertwin/report/web_assets.h"

namespace clustertwin::report {
namespace {

using base::escape_html;

/// True when `s` at `pos` starts with `word`, ignoring ASCII case.
bool starts_with_nocase(std::string_view s, size_t pos, std::string_view word) {
  if (s.size() - pos < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    const auto a = static_cast<unsigned char>(s[pos + i]);
    if (std::tolower(a) != static_cast<unsigned char>(word[i])) return false;
  }
  return true;
}

/// Stylesheet text safe inside <style>.
std::string escape_inline_style(std::string_view css) {
  std::string out;
  out.reserve(css.size());
  for (size_t i = 0; i < css.size(); ++i) {
    if (css[i] == '<' && starts_with_nocase(css, i, "</style")) {
      out += "<\\/";
      ++i;  // skip '/', the loop appends the rest
      continue;
    }
    out += css[i];
  }
  return out;
}

std::string title_of(const Json& data) {
  std::string title = "clustertwin report";
  if (data.contains("cluster") && data["cluster"].is_object()) {
    const Json& c = data["cluster"];
    if (c.contains("cluster") && c["cluster"].is_object()) {
      const Json& id = c["cluster"];
      for (const char* key : {"display_name", "name"}) {
        if (id.contains(key) && id[key].is_string() && !id[key].get<std::string>().empty()) {
          return title + ": " + id[key].get<std::string>();
        }
      }
    }
  }
  return title;
}

// Every network request is refused: the page must work from a file:// URL on a machine with no
// network, and this makes an accidental fetch (a font, a CDN script) fail loudly in the browser
// test instead of silently working online. Scripts run only when their text hashes to one of the
// page's own two (CSP Level 2 hash sources, 'sha256-<base64>'): a string of the results that
// found its way into the markup as a <script> or an on* attribute would not run (issue 19).
// Styles stay 'unsafe-inline' (ECharts positions its tooltips with style attributes).
std::string csp(std::span<const std::string_view> scripts) {
  std::string out = "default-src 'none'; script-src";
  for (auto s : scripts) out += " 'sha256-" + base::base64(base::sha256(s)) + "'";
  out += "; style-src 'unsafe-inline'; img-src data: blob:; font-src data:";
  return out;
}

}  // namespace

Json normalize_results(const Json& results) {
  if (results.is_object() && results.contains("counts") && results.contains("compute") &&
      !results.contains("collectives") && !results.contains("training")) {
    return Json{{"cluster", results}};
  }
  return results;
}

std::string json_for_script(const Json& j) {
  const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string escape_inline_script(std::string_view js) {
  std::string out;
  out.reserve(js.size());
  for (size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<') {
      if (starts_with_nocase(js, i, "</script")) {
        out += "<\\/";
        ++i;
        continue;
      }
      if (js.substr(i, 4) == "<!--") {
        out += "<\\!--";
        i += 3;
        continue;
      }
    }
    out += js[i];
  }
  return out;
}

std::string web::join(std::span<const std::string_view> pieces) {
  size_t n = 0;
  for (auto p : pieces) n += p.size();
  std::string out;
  out.reserve(n);
  for (auto p : pieces) out += p;
  return out;
}

std::string render_html(const Json& results) {
  const Json data = normalize_results(results);
  const std::string echarts = escape_inline_script(web::join(web::echarts_js()));
  const std::string script = escape_inline_script(web::join(web::report_js()));
  const std::string style = escape_inline_style(web::join(web::report_css()));
  const std::string json = json_for_script(data);

  std::string out;
  out.reserve(echarts.size() + script.size() + style.size() + json.size() + 2048);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // The two scripts' exact texts (between <script> and </script>), hashed for the policy.
  const std::string chart_lib =
      "\n/*! Apache ECharts (web/package-lock.json), Apache License 2.0 */\n" + echarts + "\n";
  const std::string page = "\n" + script + "\n";
  const std::array<std::string_view, 2> scripts = {chart_lib, page};
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"";
  out += csp(scripts);
  out += "\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"clustertwin\">\n<title>";
  out += escape_html(title_of(data));
  out += "</title>\n<style>\n";
  out += style;
  out += "</style>\n</head>\n<body>\n";
  out +=
      "<noscript><p class=\"noscript\">This report draws its tables and charts with "
      "JavaScript, which is off. The results are in the JSON block of this file.</p></noscript>\n";
  out += "<div id=\"report\"></div>\n";
  out += "<script type=\"application/json\" id=\"clustertwin-results\">";
  out += json;
  out += "</script>\n<script>";
  out += chart_lib;
  out += "</script>\n<script>";
  out += page;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace clustertwin::report
