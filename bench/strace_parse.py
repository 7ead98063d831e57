"""A straightforward strace parser, the baseline of bench/strace_ingest.sh.

Parses `strace -f -ttt -T -k -y` lines with regular expressions: pid and
time prefix, call name, arguments, return value, errno, duration; joins
`<unfinished ...>` with `<... NAME resumed>`; attaches ` > ` stack frames
to the call they follow. Keeps every call as a tuple in a list (what a
notebook user would then turn into a DataFrame) and prints the count.
"""
import re
import sys

PREFIX = re.compile(r'^(?:\[pid\s+)?(\d+)\]?\s+(\d+\.\d+)\s+(.*)$')
CALL = re.compile(r'^(\w+)\((.*)\)\s+=\s+(\S+)(?:\s+(E\w+)\s+\((.*?)\))?.*?(?:\s+<(\d+\.\d+)>)?$')
UNFINISHED = re.compile(r'^(\w+)\((.*) <unfinished \.\.\.>$')
RESUMED = re.compile(r'^<\.\.\. (\w+) resumed>(.*)\)\s+=\s+(\S+)(?:\s+(E\w+)\s+\((.*?)\))?.*?(?:\s+<(\d+\.\d+)>)?$')
FRAME = re.compile(r'^ > (.*?)\((.*)\) \[0x([0-9a-f]+)\]$')


def main(path):
    calls = []
    pending = {}
    last = None
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            m = FRAME.match(line)
            if m:
                if last is not None:
                    last[-1].append((m.group(1), m.group(2), int(m.group(3), 16)))
                continue
            m = PREFIX.match(line)
            if not m:
                continue
            pid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
            m = UNFINISHED.match(rest)
            if m:
                pending[pid] = (pid, t, m.group(1), m.group(2))
                continue
            m = RESUMED.match(rest)
            if m:
                start = pending.pop(pid, (pid, t, m.group(1), ''))
                last = [pid, start[1], m.group(1), start[3] + m.group(2), m.group(3), m.group(4),
                        m.group(6), []]
                calls.append(last)
                continue
            m = CALL.match(rest)
            if m:
                last = [pid, t, m.group(1), m.group(2), m.group(3), m.group(4), m.group(6), []]
                calls.append(last)
                continue
            last = None
    print(f'{len(calls)} calls, {sum(len(c[-1]) for c in calls)} frames')


if __name__ == '__main__':
    main(sys.argv[1])
