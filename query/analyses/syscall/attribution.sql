-- Attribution of traced system calls (Morita et al., H/W resource
-- exhaustion analysis, Fig. 8 / Table 4): which application function and
-- source line is a call charged to?
-- The application function is the first frame from the leaf whose module
-- is under the application's path prefix; the actual function is the leaf
-- (the library function or system call wrapper that made the call).
--
-- Parameters (NULL: the default):
--   $app   text   path prefix of the application's files (default: the
--                 directory of the traced executable, `_default_app`)

-- _default_app: the directory of the traced program, with a trailing `/`.
-- The program is the one the first traced process ran last (its last
-- successful `execve`: a launcher such as a pyenv shim or a shell script
-- runs other programs, then execs the real one) when that exec is the
-- trace's last and some stack ends in a module of its directory (a path
-- relative to the tracer's directory, `./bin/app`, names the module that
-- ends in it). Otherwise (perf samples, `strace -p`, a launcher that forks
-- the program, a program that runs others): the module of the outermost
-- frame of the most stacks (traced calls and perf samples) that end in
-- `_start` (the executable's entry point; threads' stacks end in libc's
-- clone; the dynamic loader's own `_start` does not count), else of the
-- most stacks.
CREATE OR REPLACE VIEW _default_app AS
WITH root AS (                 -- the first traced process (null: a dump of one process)
  SELECT capture, first_value(pid ORDER BY syscall_id) AS pid FROM syscall GROUP BY capture
),
last_exec AS (                 -- each capture's last successful exec
  SELECT capture,
         last_value(pid ORDER BY syscall_id) AS pid,
         last_value(split_part(args, '"', 2) ORDER BY syscall_id) AS path
  FROM syscall
  WHERE CAST(name AS VARCHAR) = 'execve' AND retval = 0
  GROUP BY capture
),
prog AS (                      -- ... when the first process made it
  SELECT l.path FROM last_exec l JOIN root r ON r.capture = l.capture AND r.pid IS NOT DISTINCT FROM l.pid
),
used AS (
  SELECT segment, stack_id, count(*) AS n FROM syscall WHERE stack_id IS NOT NULL GROUP BY segment, stack_id
  UNION ALL
  SELECT segment, stack_id, count(*) AS n FROM perf_sample WHERE stack_id IS NOT NULL GROUP BY segment, stack_id
),
outer_module AS (
  SELECT e.module, e.function, c.n
  FROM used c
  JOIN (SELECT segment, stack_id, max(pos) AS pos FROM stack_entry GROUP BY segment, stack_id) o
    ON o.segment = c.segment AND o.stack_id = c.stack_id
  JOIN stack_entry e ON e.segment = o.segment AND e.stack_id = o.stack_id AND e.pos = o.pos
  WHERE e.module LIKE '/%' AND e.module NOT LIKE '%/ld-linux%' AND e.module NOT LIKE '%/ld.so%'
),
execed AS (                    -- its directory, where a stack ends in a module of it
  SELECT DISTINCT regexp_replace(m.module, '/[^/]*$', '/') AS dir
  FROM prog p
  JOIN (SELECT DISTINCT module FROM outer_module) m
    ON CASE WHEN starts_with(p.path, '/')
            THEN regexp_replace(m.module, '/[^/]*$', '/') = regexp_replace(p.path, '/[^/]*$', '/')
            ELSE ends_with(m.module, concat('/', regexp_replace(p.path, '^(\./)+', '')))
       END
)
SELECT dir FROM (
  SELECT dir, 0 AS k, 0 AS a, 0 AS b FROM execed
  UNION ALL
  SELECT regexp_replace(module, '/[^/]*$', '/'), 1,
         sum(CASE WHEN function = '_start' THEN n ELSE 0 END), sum(n)
  FROM outer_module GROUP BY 1
)
ORDER BY k, a DESC, b DESC, dir   -- directory, ending in /
LIMIT 1;

-- _stack_attribution: per stack, its application frame and its leaf. A
-- PLT stub (`name@plt`) linked into the application is the library call's
-- entry, not application code: the frame that called it is the
-- application function.
CREATE OR REPLACE VIEW _stack_attribution AS
WITH app AS (
  SELECT segment, stack_id, min(pos) AS pos
  FROM stack_entry
  WHERE (($app IS NOT NULL AND starts_with(module, $app))
      OR ($app IS NULL AND starts_with(module, (SELECT dir FROM _default_app))))
    AND NOT COALESCE(function LIKE '%@plt', false)
  GROUP BY segment, stack_id
)
SELECT
  l.segment,                                    -- segment (stack_id's id space)
  l.stack_id,                                   -- stack.stack_id
  a.function AS app_function,                   -- first application frame from the leaf (null: none)
  l.function AS actual_function,                -- the leaf frame
  a.srcline AS app_line,                        -- file:line of the application frame
  a.file AS app_file,                           -- its full source path
  a.line AS app_line_number                     -- its line
FROM stack_entry l
LEFT JOIN app ON app.segment = l.segment AND app.stack_id = l.stack_id
LEFT JOIN stack_entry a ON a.segment = app.segment AND a.stack_id = app.stack_id AND a.pos = app.pos
WHERE l.pos = 0;

-- io_call: every traced call that moved bytes (its return value > 0), with
-- the file and direction.
CREATE OR REPLACE VIEW io_call AS
SELECT
  c.capture,                                    -- capture
  c.segment,                                    -- segment (stack_id's id space)
  c.syscall_id,                                 -- syscall.syscall_id
  c.source_id,                                  -- input (for time_base)
  c.pid,                                        -- thread (strace -f) / perf's tid
  c.time_ns,                                    -- entry time, syscall.time_ns's clock
  c.stack_id,                                   -- stack (strace -k)
  CAST(c.name AS VARCHAR) AS name,              -- the call
  CASE WHEN CAST(c.name AS VARCHAR) IN ('read', 'pread64', 'readv', 'preadv', 'preadv2')
       THEN 'read' ELSE 'write' END AS direction,  -- read or write
  COALESCE(c.fd_path, concat('fd ', CAST(c.fd AS VARCHAR))) AS file,  -- -y path, else `fd N`
  c.retval AS bytes                             -- bytes transferred
FROM syscall c
WHERE CAST(c.name AS VARCHAR) IN ('read', 'pread64', 'readv', 'preadv', 'preadv2',
        'write', 'pwrite64', 'writev', 'pwritev', 'pwritev2', 'sendfile', 'copy_file_range')
  AND c.retval > 0;

-- _live_region: the pieces of `memory_region` alive at $at_ns (a time on
-- syscall.time_ns's clock), or, without it, never freed by a call: alive
-- at the end of the trace, or until their process exited or exec'd (by
-- end_reason: dumps without times have no to_ns).
CREATE OR REPLACE VIEW _live_region AS
SELECT *
FROM memory_region r
WHERE CASE WHEN $at_ns IS NULL
        THEN r.end_reason IS NULL OR r.end_reason IN ('exit', 'exec')
        ELSE (r.from_ns IS NULL OR r.from_ns <= $at_ns) AND (r.to_ns IS NULL OR r.to_ns > $at_ns)
      END;

-- process_name: a name for each process, as Fig. 8 of Morita et al.
-- shows them beside the pid: perf's command of the main thread
-- (`perf_thread`), else the program the process exec'd (the last path
-- component of a successful execve's first argument, strace), else the
-- program its parent exec'd (the parent's fork/vfork/clone/clone3 returned
-- the pid). Null when none of these was recorded.
CREATE OR REPLACE VIEW process_name AS
WITH ex AS (
  SELECT capture, pid,
         max(regexp_replace(args, '^"(?:[^"]*/)?([^"/]*)".*$', '\1')) AS name
  FROM syscall
  WHERE CAST(name AS VARCHAR) = 'execve' AND retval = 0 AND args LIKE '"%'
  GROUP BY capture, pid
),
named AS (
  SELECT capture, pid, max(comm) AS name, 0 AS prio
  FROM perf_thread WHERE pid = tid AND comm IS NOT NULL
  GROUP BY capture, pid
  UNION ALL
  SELECT capture, pid, name, 1 AS prio FROM ex
  UNION ALL
  SELECT c.capture, CAST(c.retval AS INT) AS pid, max(e.name) AS name, 2 AS prio
  FROM syscall c JOIN ex e ON e.capture = c.capture AND e.pid = c.pid
  WHERE CAST(c.name AS VARCHAR) IN ('fork', 'vfork', 'clone', 'clone3') AND c.retval > 0
  GROUP BY c.capture, CAST(c.retval AS INT)
)
SELECT
  capture,                                      -- capture
  pid,                                          -- process (strace: the traced pid)
  first_value(name ORDER BY prio) AS comm       -- its name
FROM named
GROUP BY capture, pid;
