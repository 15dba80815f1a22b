#pragma once
/// The HTML report's front-end assets, compiled into the binary at build time from web/ by
/// cmake/embed_web.cmake (see cmake/web_assets.cmake): Apache ECharts (pinned by
/// web/package-lock.json) and the page's own script and stylesheet (web/src/). Each is a list of
/// pieces that, concatenated in order, are the file byte for byte.

#include <span>
#include <string>
#include <string_view>

namespace clustertwin::report::web {

/// web/node_modules/echarts/dist/echarts.min.js (Apache-2.0).
std::span<const std::string_view> echarts_js();
/// web/src/report.js: builds the page from the embedded results JSON.
std::span<const std::string_view> report_js();
/// web/src/report.css.
std::span<const std::string_view> report_css();

/// The pieces joined into one string.
std::string join(std::span<const std::string_view> pieces);

}  // namespace clustertwin::report::web
