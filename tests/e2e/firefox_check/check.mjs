#!/usr/bin/env node
// Loads a Firefox Profiler processed-profile file with the Firefox
// Profiler's own code, under node, and prints what the Profiler built.
//
// The code is the Profiler's published CLI, @firefox-devtools/profiler-cli
// (one esbuild bundle of the profiler repository's src/: its loader
// src/profile-query/loader.ts reads the file with
// unserializeProfileOfArbitraryFormat (src/profile-logic/process-profile.ts),
// which runs the processed-profile upgraders
// (src/profile-logic/processed-profile-versioning.ts), then dispatches the
// web app's own Redux actions (loadProfile, finalizeProfileView); the
// commands below read the app's selectors: thread list, sample counts,
// call tree per function).
//
// Usage: node check.mjs PROFILE.json
// The CLI is found at $FIREFOX_PROFILER_CLI (its dist/profiler-cli.js), else
// under $FIREFOX_CHECK_NPM (an `npm install --prefix` directory), else
// next to this file (`npm install` run here). Its version must be the one
// package.json pins.
//
// stdout: one JSON object
//   {"profilerCli": "0.10.0", "processedProfileVersion": N,
//    "threads": [{"handle", "name", "pid", "tid", "samples",
//                 "selfSamples": {function name: samples}, "heaviestStack": [names, root first]}]}
// stderr: a short human summary.
// Exit status: 0 when the Profiler loaded the file and every thread's
// samples reach its call tree; 1 when it refused the file or threw (its
// message on stderr); 2 on a usage or installation problem.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const PKG = '@firefox-devtools/profiler-cli';

function die(code, msg) {
  process.stderr.write(`firefox_check: ${msg}\n`);
  process.exit(code);
}

const profile = process.argv[2];
if (!profile || process.argv.length > 3) die(2, 'usage: node check.mjs PROFILE.json');
if (!existsSync(profile)) die(2, `no such file: ${profile}`);

const pinned = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).dependencies[PKG];
function findCli() {
  if (process.env.FIREFOX_PROFILER_CLI) return process.env.FIREFOX_PROFILER_CLI;
  const prefix = process.env.FIREFOX_CHECK_NPM || here;
  return join(prefix, 'node_modules', PKG, 'dist', 'profiler-cli.js');
}
const cli = findCli();
if (!existsSync(cli)) {
  die(2, `${cli} is missing: npm install --prefix DIR ${PKG}@${pinned} and set FIREFOX_CHECK_NPM=DIR`);
}
const installed = JSON.parse(readFileSync(join(dirname(cli), '..', 'package.json'), 'utf8')).version;
if (installed !== pinned) die(2, `${PKG} ${installed} is installed, package.json pins ${pinned}`);

// A private session directory (the CLI keeps its daemon's socket and log
// there) and no symbolication (it would ask Mozilla's symbol server).
const sessionDir = mkdtempSync(join(tmpdir(), 'trawl-firefox-check-'));
const session = 'check';
const env = {
  ...process.env,
  PROFILER_CLI_SESSION_DIR: sessionDir,
  PROFILER_CLI_NO_SYMBOLICATE: '1',
};

function run(args) {
  return spawnSync(process.execPath, [cli, ...args, '--session', session], {
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
}
function fail(what, r) {
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`.trim();
  process.stderr.write(`firefox_check: the Firefox Profiler ${what}:\n${out}\n`);
  const log = join(sessionDir, `${session}.log`);
  if (existsSync(log)) {
    const tail = readFileSync(log, 'utf8').trimEnd().split('\n').slice(-30).join('\n');
    process.stderr.write(`--- end of the CLI daemon's log ---\n${tail}\n`);
  }
  cleanup();
  process.exit(1);
}
function query(args) {
  const r = run([...args, '--json']);
  if (r.status !== 0) fail(`failed on \`${args.join(' ')}\``, r);
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    fail(`printed no JSON for \`${args.join(' ')}\` (${e})`, r);
  }
}
let loaded = false;
function cleanup() {
  if (loaded) {
    run(['stop']);
    if (exited === null) daemon.kill();
  }
  rmSync(sessionDir, { recursive: true, force: true });
}

// `profiler-cli load` starts the daemon (this same bundle with --daemon)
// and gives it 500 ms, fixed, to open its socket: on a busy machine (the
// test run compiles beside it) node takes longer than that to read the
// 1.3 MB bundle, and the load fails without saying anything about the
// file. So start the daemon here, the way `load` does, and wait for it as
// long as a query may take: its socket (the session's metadata file names
// it) answers {"type":"status"} with "loading" until the Profiler has
// processed the file, then "ready", or "error" with the Profiler's reason.
function status(socketPath) {
  return new Promise((done) => {
    const c = connect(socketPath);
    let buf = '';
    c.setTimeout(10_000);
    c.on('connect', () => c.write(JSON.stringify({ type: 'status' }) + '\n'));
    c.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      c.end();
      try {
        done(JSON.parse(buf.slice(0, nl)));
      } catch (e) {
        done({ type: 'unreachable', error: String(e) });
      }
    });
    c.on('error', (e) => done({ type: 'unreachable', error: String(e) }));
    c.on('timeout', () => {
      c.destroy();
      done({ type: 'unreachable', error: 'no answer in 10 s' });
    });
  });
}
const daemon = spawn(process.execPath, [cli, '--daemon', resolve(profile), '--session', session], {
  env,
  stdio: 'ignore',
});
daemon.unref();
let exited = null;
daemon.on('exit', (code, signal) => (exited = signal ?? `exit status ${code}`));
daemon.on('error', (e) => (exited = String(e)));
loaded = true;
const meta0 = join(sessionDir, `${session}.json`);
for (const deadline = Date.now() + 120_000; ; ) {
  await new Promise((r) => setTimeout(r, 100));
  if (exited !== null) {
    const why = join(sessionDir, `${session}.error`);
    const reason = existsSync(why) ? readFileSync(why, 'utf8') : '';
    fail(`daemon stopped before loading the file (${exited})`, { stdout: reason });
  }
  let st = { type: 'starting' };
  if (existsSync(meta0)) {
    try {
      st = await status(JSON.parse(readFileSync(meta0, 'utf8')).socketPath);
    } catch {}
  }
  if (st.type === 'ready') break;
  if (st.type === 'error') fail('refused the file', { stdout: st.error });
  if (Date.now() > deadline) fail(`did not load the file in 120 s (last status: ${st.type})`, { stdout: st.error });
}

const meta = query(['profile', 'meta']);
const list = query(['thread', 'list']);
const threads = [];
const problems = [];
for (const t of list.threads) {
  const h = t.threadHandle;
  const info = query(['thread', 'info', '--thread', h]);
  const fns = query(['thread', 'functions', '--thread', h, '--include-idle', '--limit', '0']);
  const smp = query(['thread', 'samples', '--thread', h, '--include-idle']);
  const selfSamples = {};
  let sum = 0;
  for (const f of fns.functions) {
    if (f.selfSamples) selfSamples[f.name] = (selfSamples[f.name] ?? 0) + f.selfSamples;
    sum += f.selfSamples;
  }
  // Every sample must land on a leaf function of the Profiler's call tree.
  // (Counts are sample weights; trawl writes weightType "samples".)
  if (fns.functions.length !== fns.totalFunctionCount) {
    problems.push(`${h}: ${fns.functions.length} of ${fns.totalFunctionCount} functions listed`);
  }
  if (Math.round(sum) !== info.sampleCount && fns.weightType === 'samples') {
    problems.push(`${h}: ${info.sampleCount} samples but ${sum} reach a leaf function`);
  }
  threads.push({
    handle: h,
    name: t.name,
    pid: t.pid,
    tid: t.tid,
    samples: info.sampleCount,
    selfSamples,
    heaviestStack: (smp.heaviestStack?.frames ?? []).map((f) => f.name),
  });
}
if (list.threads.length !== list.totalThreadCount) {
  problems.push(`${list.threads.length} of ${list.totalThreadCount} threads listed`);
}
cleanup();

const version = meta.preprocessedProfileVersion;
process.stderr.write(
  `${PKG} ${installed}: loaded ${profile} (upgraded to processed version ${version}), ` +
    `${threads.length} threads, ${threads.reduce((a, t) => a + t.samples, 0)} samples\n`
);
for (const t of threads) {
  process.stderr.write(`  ${t.handle} ${t.name} tid ${t.tid}: ${t.samples} samples, heaviest stack ${t.heaviestStack.join(' > ')}\n`);
}
process.stdout.write(
  JSON.stringify({ profilerCli: installed, processedProfileVersion: version, threads }, null, 1) + '\n'
);
if (problems.length) die(1, `inconsistent profile:\n  ${problems.join('\n  ')}`);
