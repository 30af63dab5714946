# What changes from run to run, or from build to build, in a report:
# the PID, addresses, durations, code offsets in stack frames, thread ids.
s/atlas\[[0-9]+\]/atlas[PID]/g
s/0x[0-9a-f]{8,}/0xADDR/g
# the distance between two addresses is an address too
s/(0xADDR[^>]*-> 0xADDR[^(]*)\(delta [+-][0-9]+\)/\1(delta D)/g
# a frame without a symbol: the library and an offset
s/([A-Za-z0-9_.-]+\.so[.0-9]*)\+0x[0-9a-f]+/\1+OFF/g
s/[0-9]+\.[0-9]+ ?(ns|us|ms|s)\b/T \1/g
s/\b[0-9]+ ?(ns|us|ms)\b/T \1/g
s/([A-Za-z_][A-Za-z0-9_]*)\+0x[0-9a-f]+ \(/\1+OFF (/g
s/pid [0-9]+/pid PID/g
s/tid [0-9]+/tid TID/g
# a frame's source line (where the binary has debug information): the file stays, the line
# moves with every edit of the test program
s/ \(([A-Za-z0-9_.+-]+\.[a-zA-Z]+):[0-9]+\)/ (\1:LINE)/g
# a site inside a program without its symbols, ended by ')' or ';' ("made ... at trace_steps+0x4eb4)")
s/([A-Za-z_][A-Za-z0-9_]*)\+0x[0-9a-f]+([);])/\1+OFF\2/g
