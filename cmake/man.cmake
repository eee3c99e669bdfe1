# Man pages, one per tool, made by help2man from each tool's --help (always current), and
# the docs, installed under share/man/man1 and share/doc/mpilab.
find_program(HELP2MAN help2man)
if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  set(_py ${CMAKE_SOURCE_DIR}/.venv/bin/python)
else()
  find_program(_py NAMES python3)
endif()
set(MPILAB_PYTHON ${_py} CACHE FILEPATH "Python that runs the mpilab command (man page)")
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} PATTERN man EXCLUDE)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(NOT HELP2MAN)
  message(WARNING "help2man not found (scripts/install-deps installs it): no man pages")
  return()
endif()
get_property(MPILAB_MAN_TOOLS GLOBAL PROPERTY MPILAB_MAN_TOOLS)
set(_pages)
foreach(entry ${MPILAB_MAN_TOOLS})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 tool)
  list(GET parts 1 what)
  set(page ${CMAKE_BINARY_DIR}/man/${tool}.1)
  # --version-string: help2man does not depend on each tool's --version output
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND ${HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
            "--name=${what}" --output=${page} $<TARGET_FILE:${tool}>
    DEPENDS ${tool} VERBATIM)
  list(APPEND _pages ${page})
endforeach()
# the mpilab command, from this source tree
set(_wrap ${CMAKE_BINARY_DIR}/man/mpilab)
file(WRITE ${CMAKE_BINARY_DIR}/mpilab-man-wrapper.in
  "#!/bin/sh\nPYTHONPATH='${CMAKE_SOURCE_DIR}/python' exec '${MPILAB_PYTHON}' -m mpilab.cli \"$@\"\n")
file(COPY ${CMAKE_BINARY_DIR}/mpilab-man-wrapper.in DESTINATION ${CMAKE_BINARY_DIR}/man-tmp
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/man)
file(RENAME ${CMAKE_BINARY_DIR}/man-tmp/mpilab-man-wrapper.in ${_wrap})
file(GLOB_RECURSE _pysrc CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/mpilab/*.py)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/mpilab.1
  COMMAND ${HELP2MAN} --no-info --version-string=${PROJECT_VERSION}
          "--name=measure, model, tune and harden MPI communication"
          --output=${CMAKE_BINARY_DIR}/man/mpilab.1 ${_wrap}
  DEPENDS ${_pysrc} VERBATIM)
list(APPEND _pages ${CMAKE_BINARY_DIR}/man/mpilab.1)
add_custom_target(mpilab_man ALL DEPENDS ${_pages})
install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
