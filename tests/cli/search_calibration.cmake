# `search --calibration`: the compute-time scale of a step-time profile (0.816, fitted by
# `calibrate` on the DGX H100 Llama 3.1 405B step) shortens the best layout's step by what it
# says; without a training: mapping the flag is refused (tests/cli/calibrate.cmake).
#   -DBIN=<clustertwin> -DPROFILE=<profile.yaml> -DWORKDIR=<dir>
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)
function(best_step out_var)
  ct_run(out 0 search --cluster hgx-h100*8 --gpus 64 --model llama3.1-70b --global-batch 128
         --seq-len 8192 --precision fp8 --top 1 --threads 1 --json - ${ARGN})
  string(JSON step GET "${out}" search best 0 step_time_s)
  set(${out_var} ${step} PARENT_SCOPE)
endfunction()
best_step(plain)
best_step(fitted --calibration ${PROFILE})
message(STATUS "best layout's step ${plain} s -> ${fitted} s with the profile")
if(NOT fitted LESS plain)
  message(FATAL_ERROR "the profile's compute-time scale 0.816 did not shorten the step: "
                      "${plain} -> ${fitted} s")
endif()
