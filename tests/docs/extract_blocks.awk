# Lists the fenced code blocks of Markdown files (for check_examples.sh). For each block it
# prints one tab-separated record
#     N  FILE  LINE  INFO  SOURCE
# N: the block's number, counting from 1 over all files; LINE: the line of the block's first
# line of code; INFO: the fence's info string ("cpp", "sh", ...); SOURCE: the last *.cpp file
# linked ("](path.cpp)") from the nearest non-blank line above the fence, or "-". The block's
# text goes to DIR/block-N.txt. A fence left open at the end of a file is a record with N 0 and
# INFO "unclosed". Run as: LC_ALL=C awk -v dir=DIR -f extract_blocks.awk FILE.md...
FNR == 1 {
  if (open) print "0\t" open_file "\t" open_line "\tunclosed\t-"
  open = 0
  last_nonblank = ""
}
!open {
  if (match($0, /^ ? ? ?(```+|~~~+)/)) {
    fence = substr($0, RSTART, RLENGTH)
    sub(/^ +/, "", fence)
    info = substr($0, RSTART + RLENGTH)
    sub(/^[ \t]+/, "", info)
    sub(/[ \t]+$/, "", info)
    source = "-"
    rest = last_nonblank
    while (match(rest, /\]\([^) \t]+\.cpp(#[^) \t]*)?\)/)) {
      source = substr(rest, RSTART + 2, RLENGTH - 3)
      sub(/#.*/, "", source)
      rest = substr(rest, RSTART + RLENGTH)
    }
    open = 1
    open_file = FILENAME
    open_line = FNR + 1
    path = dir "/block-" (++blocks) ".txt"
    printf "" > path
    print blocks "\t" FILENAME "\t" open_line "\t" info "\t" source
    next
  }
  if ($0 ~ /[^ \t]/) last_nonblank = $0
  next
}
{
  # A closing fence: the opening fence's character, at least as many, nothing else.
  closing = $0
  sub(/^ ? ? ?/, "", closing)
  sub(/[ \t]+$/, "", closing)
  if (closing ~ /^(```+|~~~+)$/ && substr(closing, 1, 1) == substr(fence, 1, 1) &&
      length(closing) >= length(fence)) {
    open = 0
    close(path)
    last_nonblank = ""
    next
  }
  print > path
}
END {
  if (open) print "0\t" open_file "\t" open_line "\tunclosed\t-"
}
