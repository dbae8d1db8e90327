# Installs grafx's dev component from BUILD into a fresh prefix under WORK, then builds the
# README's C++ program (PROGRAM) as an outside project that finds it with find_package(grafx),
# and runs it: the installed headers, libraries and package configuration are complete. Then a
# host that links the real-time engine alone (tests/install/stream_host, grafx::stream) plays the
# program GRAFX export-lv2 writes, built with no LibTorch on its include or link line.
foreach(var BUILD SOURCE PROGRAM WORK GRAFX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD} --component dev --prefix ${prefix})
foreach(file include/grafx/render/render.h lib/cmake/grafx/grafxConfig.cmake)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install lacks ${file}")
  endif()
endforeach()
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install -B ${WORK}/consumer -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix} -DPROGRAM=${PROGRAM})
run(${CMAKE_COMMAND} --build ${WORK}/consumer)
run(${WORK}/consumer/consumer)
string(REGEX MATCHALL "gradient norm [0-9.e+-]+" norms "${output}")
list(LENGTH norms n_norms)
if(n_norms LESS 3 OR output MATCHES "gradient norm (0|nan|-?inf)\n")
  message(FATAL_ERROR "the installed library's program printed:\n${output}")
endif()
message(STATUS "find_package(grafx) from ${prefix}: built and ran; ${n_norms} parameters learn")

# The real-time engine alone: find_package(grafx COMPONENTS stream) needs no LibTorch.
run(${GRAFX} export-lv2 ${SOURCE}/examples/channel_strips.json --sample-rate 48000
    -o ${WORK}/strips.lv2)
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install/stream_host -B ${WORK}/stream_host -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK}/stream_host -- -v)
if(output MATCHES "torch|ATen|c10|gomp|nlohmann")
  message(FATAL_ERROR "the stream host's build names more than grafx::stream:\n${output}")
endif()
run(${WORK}/stream_host/stream_host ${WORK}/strips.lv2/stream.program)
if(NOT output MATCHES "truncated program refused: \\[grafx\\.stream\\.program\\]" OR
   NOT output MATCHES "0 silenced, output peak 0\\.[0-9]*[1-9]")
  message(FATAL_ERROR "the stream host printed:\n${output}")
endif()
message(STATUS "find_package(grafx COMPONENTS stream): a host without LibTorch played ${output}")
