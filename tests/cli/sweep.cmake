# clustertwin sweep (docs/sweep.md): determinism over threads and MPI ranks, kill -9 and resume,
# a finished sweep re-run, the example study, and bad designs (exit 2, file:line).
find_program(CT_BASH bash)
find_package(Python3 COMPONENTS Interpreter)
if(CT_BASH AND Python3_Interpreter_FOUND)
  add_test(NAME cli.sweep_threads_kill_resume
           COMMAND ${CT_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_test.sh $<TARGET_FILE:clustertwin>
                   ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/tiny.yaml ${CMAKE_CURRENT_BINARY_DIR}/sweep-threads)
  set_tests_properties(cli.sweep_threads_kill_resume PROPERTIES LABELS "cli;sweep" TIMEOUT 600)
endif()
find_program(CT_MPIRUN mpirun)
if(CT_BASH AND CT_MPIRUN AND MPI_CXX_FOUND)
  # Runnable as root in CI containers: the script sets OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).
  add_test(NAME cli.sweep_mpi_three_ranks_same_bytes
           COMMAND ${CT_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_test.sh $<TARGET_FILE:clustertwin>
                   ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/tiny.yaml ${CMAKE_CURRENT_BINARY_DIR}/sweep-mpi mpi)
  set_tests_properties(cli.sweep_mpi_three_ranks_same_bytes PROPERTIES LABELS "cli;sweep" TIMEOUT 600)
endif()
if(CT_BASH)
  add_test(NAME cli.sweep_example_gb300_study
           COMMAND ${CT_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_test.sh $<TARGET_FILE:clustertwin>
                   ${PROJECT_SOURCE_DIR}/examples/gb300-study.yaml ${CMAKE_CURRENT_BINARY_DIR}/sweep-example example)
  set_tests_properties(cli.sweep_example_gb300_study PROPERTIES LABELS "cli;sweep;example" TIMEOUT 600)
endif()
if(CT_BASH)
  add_test(NAME cli.sweep_example_search_study
           COMMAND ${CT_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_test.sh $<TARGET_FILE:clustertwin>
                   ${PROJECT_SOURCE_DIR}/examples/search-study.yaml ${CMAKE_CURRENT_BINARY_DIR}/sweep-search-example example)
  set_tests_properties(cli.sweep_example_search_study PROPERTIES LABELS "cli;sweep;example" TIMEOUT 900)
endif()
if(Python3_Interpreter_FOUND)
  # A point with `search:`: its row is `clustertwin search`'s winner, run as `train` runs it.
  add_test(NAME cli.sweep_search_points_are_the_search_winners
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep_search_test.py
                   $<TARGET_FILE:clustertwin> ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/search.yaml
                   ${CMAKE_CURRENT_BINARY_DIR}/sweep-search)
  set_tests_properties(cli.sweep_search_points_are_the_search_winners PROPERTIES LABELS "cli;sweep" TIMEOUT 600)
endif()
ct_cli_test(NAME bad.sweep_unknown_scenario_key RC 2
            ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/bad_key.yaml --db bad-key.db
            STDERR "bad_key.yaml:7: point 0 (workload.training.tpp=1): workload.training: unknown key 'tpp'")
ct_cli_test(NAME bad.sweep_search_and_a_layout RC 2
            ARGS sweep ${CMAKE_CURRENT_SOURCE_DIR}/cli/sweep/search_with_tp.yaml --db search-tp.db
            STDERR "search_with_tp.yaml:11: point 0 (workload.training.tp=1): workload.training.tp: the layout search (search:) chooses the parallel layout: 'tp' cannot be given with it")
ct_cli_test(NAME bad.sweep_missing_file RC 2 ARGS sweep nope.yaml STDERR "nope.yaml")
