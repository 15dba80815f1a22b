# Runs one CLI invocation for CTest and checks it.
#   -DBIN=<clustertwin> -DARGS=<;-list> -DEXPECT_RC=<int>
#   [-DGOLDEN=<file>]       stdout must equal the file (CT_UPDATE_GOLDENS=1 rewrites it)
#   [-DEXPECT_STDERR=<s>]   stderr must contain s
#   [-DEXPECT_STDOUT=<s>]   stdout must contain s
#   [-DWORKDIR=<dir>]
if(NOT WORKDIR)
  set(WORKDIR ${CMAKE_CURRENT_BINARY_DIR})
endif()
execute_process(COMMAND ${BIN} ${ARGS}
                WORKING_DIRECTORY ${WORKDIR}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
                TIMEOUT 600)
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_STDERR)
  string(FIND "${err}" "${EXPECT_STDERR}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "stderr does not contain '${EXPECT_STDERR}'\nstderr:\n${err}")
  endif()
endif()
if(DEFINED EXPECT_STDOUT)
  string(FIND "${out}" "${EXPECT_STDOUT}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "stdout does not contain '${EXPECT_STDOUT}'\nstdout:\n${out}")
  endif()
endif()
if(DEFINED GOLDEN)
  if("$ENV{CT_UPDATE_GOLDENS}" STREQUAL "1")
    file(WRITE ${GOLDEN} "${out}")
    message(STATUS "rewrote ${GOLDEN}")
  elseif(NOT EXISTS ${GOLDEN})
    message(FATAL_ERROR "golden file ${GOLDEN} is missing; run with CT_UPDATE_GOLDENS=1 and review the diff")
  else()
    file(READ ${GOLDEN} want)
    if(NOT out STREQUAL want)
      file(WRITE ${GOLDEN}.actual "${out}")
      execute_process(COMMAND diff -u ${GOLDEN} ${GOLDEN}.actual OUTPUT_VARIABLE d)
      message(FATAL_ERROR "output differs from ${GOLDEN} (CT_UPDATE_GOLDENS=1 rewrites it):\n${d}")
    endif()
  endif()
endif()
