"""What the per-case e2e suites (ops/check_ops.py, grad/check_vjps.py,
cuda/check_cuda_kernels.py) share: finding the tools, the scratch directory, which
cases run (--only, --every/--offset), and running every case with one PASS/FAIL line
each and the closing `N passed, M failed` line."""
import os
import shlex
import shutil
import subprocess
import tempfile
import time

# No tool run by the e2e suites may hang CI: every call has a limit, and the
# message names the command that ran past it. TFC_E2E_TIMEOUT_SCALE stretches
# every limit (e.g. 4 under valgrind or on a slow machine).
DEFAULT_TIMEOUT_S = 300


class ToolTimeout(Exception):
    pass


def timeout_s(seconds=DEFAULT_TIMEOUT_S):
    return seconds * float(os.environ.get("TFC_E2E_TIMEOUT_SCALE", "1"))


def run_tool(args, cwd=None, timeout=DEFAULT_TIMEOUT_S, merge_stderr=False):
    """subprocess.run(args) with text output and a time limit. Returns the
    CompletedProcess; raises ToolTimeout naming the command (and where it ran)
    when it runs past `timeout` seconds, after killing it."""
    limit = timeout_s(timeout)
    try:
        return subprocess.run(
            [str(a) for a in args], cwd=cwd, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True, errors="replace", timeout=limit)
    except subprocess.TimeoutExpired:
        where = f" (in {cwd})" if cwd else ""
        raise ToolTimeout(f"timed out after {limit:.0f} s: "
                          f"{' '.join(shlex.quote(str(a)) for a in args)}{where}")


def find_tools(bin_dir, names=("tfc", "tfc-run")):
    """Absolute paths of the tools (cases run them from their own folders), or
    None after printing why, as a failed run."""
    paths = [os.path.abspath(os.path.join(bin_dir, name)) for name in names]
    for tool in paths:
        if not os.access(tool, os.X_OK):
            print(f"error: {tool} not found (build it first)")
            print("0 passed, 1 failed")
            return None
    return paths


def tfc_flags():
    """The options `tfc` adds from $TFC_OPTIONS to every compile: lit reruns the
    suites with each optimization off (e.g. TFC_OPTIONS=--no-fuse), and cases
    whose expectations depend on them read them here."""
    return shlex.split(os.environ.get("TFC_OPTIONS", ""))


def scratch_dir(work_dir, prefix):
    """`work_dir` emptied and kept, or a fresh temporary folder."""
    if work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
        os.makedirs(work_dir)
        return work_dir
    return tempfile.mkdtemp(prefix=prefix)


def add_selection_args(ap):
    """--only SUBSTR and --every K --offset J (lit spreads a suite's option variants over
    its cases with them)."""
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--every", type=int, default=1, help="run every K-th case only")
    ap.add_argument("--offset", type=int, default=0, help="... starting with this one")


def select_cases(ap, opts, cases):
    """The cases of `cases` that add_selection_args' options select, each given `index`:
    its place in the whole list, for what must not depend on the selection (a case's
    random draws). When none is selected, prints a failed run's last line and returns []."""
    if opts.every < 1 or not 0 <= opts.offset < opts.every:
        ap.error("--every K --offset J needs K >= 1 and 0 <= J < K")
    for k, case in enumerate(cases):
        case.index = k
    chosen = [c for c in cases if c.index % opts.every == opts.offset and
              (not opts.only or opts.only in c.name)]
    if not chosen:
        print("error: no case selected")
        print("0 passed, 1 failed")
    return chosen


def run_cases(cases, run_one, work, keep):
    """Runs run_one(case) -> (ok, detail) for every case; an exception is that
    case's failure, not the suite's. Removes `work` unless `keep`. Returns the
    exit status."""
    passed = failed = 0
    start = time.time()
    for case in cases:
        try:
            ok, detail = run_one(case)
        except Exception as e:  # a broken case is a failure, not a crash of the suite
            ok, detail = False, f"{type(e).__name__}: {e}"
        print(f"{'PASS' if ok else 'FAIL'} {case.name}: {detail}", flush=True)
        passed += ok
        failed += not ok
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    print(f"({time.time() - start:.0f} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
