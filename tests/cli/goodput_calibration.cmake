# `goodput --calibration`: the compute-time scale of a step-time profile (0.816) shortens the
# job's step the scheduler prices, so the run needs fewer days of wall time per token.
#   -DBIN=<clustertwin> -DPROFILE=<profile.yaml> -DWORKDIR=<dir>
function(goodput_step out_var)
  execute_process(COMMAND ${BIN} goodput --cluster hgx-h100*16 --gpus 128 --model llama3.1-70b
                          --tp 8 --pp 4 --global-batch 256 --days 7 --no-sweep --json - ${ARGN}
                  WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc TIMEOUT 600)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "goodput ${ARGN} failed (${rc}):\n${err}")
  endif()
  string(JSON step GET "${out}" goodput step_time_s)
  set(${out_var} ${step} PARENT_SCOPE)
endfunction()
goodput_step(plain)
goodput_step(fitted --calibration ${PROFILE})
message(STATUS "goodput step ${plain} s -> ${fitted} s with the profile")
if(NOT fitted LESS plain)
  message(FATAL_ERROR "the profile's compute-time scale did not shorten the step: ${plain} -> ${fitted} s")
endif()
