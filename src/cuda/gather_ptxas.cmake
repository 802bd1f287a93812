# Concatenates the per-object ptxas reports (written by capture_ptxas.sh) into one file.
#   cmake -DLOGS=<dir> -DOUT=<file> -P gather_ptxas.cmake
file(GLOB reports "${LOGS}/*.ptxas.txt")
list(SORT reports)
set(text "")
foreach(r IN LISTS reports)
  get_filename_component(name "${r}" NAME)
  file(READ "${r}" body)
  string(APPEND text "== ${name}\n${body}")
endforeach()
file(WRITE "${OUT}" "${text}")
