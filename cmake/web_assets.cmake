# The HTML report's front-end assets (web/). Included by src/clustertwin/report/CMakeLists.txt.
#
# web/package.json + web/package-lock.json pin Apache ECharts (and playwright-core for the browser
# test). When web/node_modules is missing or older than the lock file, configure runs
# `npm ci --no-audit --no-fund` once; the minified echarts.js and the page's own web/src/report.js
# and report.css are then embedded into the binary (cmake/embed_web.cmake), so the report needs no
# network and no install step at run time.
#
# ct_web_assets(OUT_VAR) sets OUT_VAR to the generated .cpp files.

set(CT_WEB_DIR ${PROJECT_SOURCE_DIR}/web)
set(CT_ECHARTS_JS ${CT_WEB_DIR}/node_modules/echarts/dist/echarts.min.js)
set(CT_WEB_STAMP ${CT_WEB_DIR}/node_modules/.package-lock.json)  # written by npm ci
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CT_WEB_DIR}/package-lock.json)

function(ct_npm_ci)
  set(need FALSE)
  if(NOT EXISTS ${CT_ECHARTS_JS} OR NOT EXISTS ${CT_WEB_STAMP})
    set(need TRUE)
  elseif(${CT_WEB_DIR}/package-lock.json IS_NEWER_THAN ${CT_WEB_STAMP})
    set(need TRUE)
  endif()
  if(NOT need)
    return()
  endif()
  find_program(CT_NPM npm)
  if(NOT CT_NPM)
    message(FATAL_ERROR
      "npm not found: the HTML report embeds Apache ECharts from web/node_modules, installed by "
      "`npm ci` in web/. Install Node.js 20 and npm (Debian: `apt-get install -y nodejs npm`) "
      "and configure again, or run `npm ci --no-audit --no-fund` in web/ yourself.")
  endif()
  message(STATUS "web/: npm ci --no-audit --no-fund (pinned by web/package-lock.json)")
  # Never let a package download a browser: the browser test uses Debian's chromium.
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1
            ${CT_NPM} ci --no-audit --no-fund
    WORKING_DIRECTORY ${CT_WEB_DIR}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${CT_ECHARTS_JS})
    message(FATAL_ERROR "`npm ci` in ${CT_WEB_DIR} failed (exit ${rc}); the npm registry must be "
                        "reachable once to vendor ECharts.\n${out}\n${err}")
  endif()
endfunction()

function(ct_web_assets out_var)
  ct_npm_ci()
  set(generated "")
  foreach(pair "echarts_js=${CT_ECHARTS_JS}" "report_js=${CT_WEB_DIR}/src/report.js"
               "report_css=${CT_WEB_DIR}/src/report.css")
    string(REPLACE "=" ";" parts "${pair}")
    list(GET parts 0 symbol)
    list(GET parts 1 input)
    set(output ${CMAKE_CURRENT_BINARY_DIR}/web_${symbol}.cpp)
    add_custom_command(
      OUTPUT ${output}
      COMMAND ${CMAKE_COMMAND} -DIN=${input} -DSYMBOL=${symbol} -DOUT=${output}
              -P ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake
      DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake
      COMMENT "Embedding web asset ${symbol} into the binary")
    list(APPEND generated ${output})
  endforeach()
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
