# The package test: install the build into a scratch prefix, configure the consumer project against
# it (find_package(hydragen)), build it and run it. -DBUILD=<this build> -DSOURCE=<tests/package>
# -DWORK=<scratch folder> -DGENERATOR=<generator>
file(REMOVE_RECURSE ${WORK})
foreach(step IN ITEMS install configure build run)
  if(step STREQUAL "install")
    set(command ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix)
  elseif(step STREQUAL "configure")
    set(command ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix
                -DCMAKE_BUILD_TYPE=Release)
  elseif(step STREQUAL "build")
    set(command ${CMAKE_COMMAND} --build ${WORK}/build)
  else()
    set(command ${WORK}/build/hydragen_consumer)
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package test: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
endforeach()
message("${out}")
