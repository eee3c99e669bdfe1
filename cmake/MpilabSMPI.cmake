# The SMPI flavour (-DMPILAB_MPI=smpi): SimGrid's SMPI runs unmodified MPI programs as
# simulated ranks on a platform file (hosts, links, their speeds and latencies), so
# measurements at 16-1024 ranks run on one machine with exactly known links.
#
# smpicc is the compiler (it adds SMPI's mpi.h, smpi_helpers.h and -lsimgrid itself), so
# MPI::MPI_C is an empty interface target here; the launcher is smpirun. Sets
# MPILAB_MPI_IMPL=smpi, MPILAB_MPI_VERSION (SimGrid's), MPILAB_MPIEXEC, MPI_C_COMPILER.
get_filename_component(_cc "${CMAKE_C_COMPILER}" NAME)
if(NOT _cc MATCHES "^smpicc")
  message(FATAL_ERROR "MPILAB_MPI=smpi needs smpicc as the C compiler "
                      "(-DCMAKE_C_COMPILER=smpicc, as scripts/build --smpi does; "
                      "smpicc comes with SimGrid: apt install libsimgrid-dev)")
endif()
find_program(MPILAB_MPIEXEC NAMES smpirun DOC "SimGrid's SMPI launcher")
if(NOT MPILAB_MPIEXEC)
  message(FATAL_ERROR "MPILAB_MPI=smpi: smpirun not found (apt install libsimgrid-dev)")
endif()
find_file(MPILAB_SIMGRID_VERSION_H simgrid/version.h)
set(MPILAB_MPI_VERSION "")
if(MPILAB_SIMGRID_VERSION_H)
  file(STRINGS "${MPILAB_SIMGRID_VERSION_H}" _defs REGEX "^#define SIMGRID_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(_l IN LISTS _defs)
    if(_l MATCHES "^#define SIMGRID_VERSION_(MAJOR|MINOR|PATCH) +([0-9]+)")
      set(_sg_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    endif()
  endforeach()
  set(MPILAB_MPI_VERSION "${_sg_MAJOR}.${_sg_MINOR}.${_sg_PATCH}")
endif()
set(MPILAB_MPI_IMPL smpi)
set(MPI_C_COMPILER "${CMAKE_C_COMPILER}")
if(NOT TARGET MPI::MPI_C)
  add_library(MPI::MPI_C INTERFACE IMPORTED)
endif()
