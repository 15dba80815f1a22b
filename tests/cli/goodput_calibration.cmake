# `goodput --calibration`: the compute-time scale of a step-time profile (0.816) shortens the
# job's step the scheduler prices, so the run needs fewer days of wall time per token.
#   -DBIN=<clustertwin> -DPROFILE=<profile.yaml> -DWORKDIR=<dir>
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)
function(goodput_step out_var)
  ct_run(out 0 goodput --cluster hgx-h100*16 --gpus 128 --model llama3.1-70b --tp 8 --pp 4
         --global-batch 256 --days 7 --no-sweep --json - ${ARGN})
  string(JSON step GET "${out}" goodput step_time_s)
  set(${out_var} ${step} PARENT_SCOPE)
endfunction()
goodput_step(plain)
goodput_step(fitted --calibration ${PROFILE})
message(STATUS "goodput step ${plain} s -> ${fitted} s with the profile")
if(NOT fitted LESS plain)
  message(FATAL_ERROR "the profile's compute-time scale did not shorten the step: ${plain} -> ${fitted} s")
endif()
