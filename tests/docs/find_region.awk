# Whether a code block (first file) is a contiguous run of lines of a source file (second
# file), allowing one indentation common to the run removed: the block of a function's body
# shown at the margin. A blank block line matches a line that is empty or holds only blanks.
# Prints "FIRST-LAST" (the source lines) and exits 0 when found; exits 1 otherwise.
# Run as: LC_ALL=C awk -f find_region.awk BLOCK SOURCE
FNR == NR { block[++nb] = $0; next }
{ source[++ns] = $0 }
function blank(s) { return s !~ /[^ \t]/ }
END {
  first = 0
  for (j = 1; j <= nb; ++j)
    if (!blank(block[j])) { first = j; break }
  if (first == 0) exit 1
  for (i = 1; i + nb - 1 <= ns; ++i) {
    # The indentation is what stands before the first non-blank block line in this run.
    s = source[i + first - 1]
    n = length(s) - length(block[first])
    if (n < 0 || substr(s, n + 1) != block[first]) continue
    indent = substr(s, 1, n)
    if (!blank(indent) && n > 0) continue
    ok = 1
    for (j = 1; j <= nb && ok; ++j) {
      s = source[i + j - 1]
      if (blank(block[j])) ok = blank(s)
      else ok = (s == indent block[j])
    }
    if (ok) { print i "-" (i + nb - 1); found = 1; exit 0 }
  }
  exit 1
}
