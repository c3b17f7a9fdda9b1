#!/usr/bin/env python3
"""Checks that a compile-fail case does not compile, for the right reason.

    run_case.py BUILD_DIR CASE.cpp

CASE.cpp carries a line `// expect-error: TEXT` (alternatives: `A || B`, for wording that differs
between g++ and clang).  The case is a build_by_default: false target in tests/compile_fail/
meson.build, so compile_commands.json holds its exact compile command (the project's flags,
Kokkos, the sanitizer flags of a sanitizer build, the compiler of a clang build).  This script
runs that command twice:
  1. with -DKAX_COMPILE_FAIL_CONTROL, which hides the bad line: it must compile, so a case cannot
     pass because of an unrelated mistake (a missing include, a typo);
  2. as is: it must fail, and the diagnostic must contain TEXT.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def compile_command(build_dir, case):
    with open(os.path.join(build_dir, 'compile_commands.json')) as f:
        entries = json.load(f)
    for e in entries:
        path = os.path.normpath(os.path.join(e['directory'], e['file']))
        if os.path.realpath(path) == os.path.realpath(case):
            args = e['arguments'] if 'arguments' in e else shlex.split(e['command'])
            return e['directory'], args
    sys.exit(f'{case}: no entry in {build_dir}/compile_commands.json (is it listed in '
             'tests/compile_fail/meson.build?)')


def prepared(args, obj):
    """The compile command writing to obj, without dependency files, colours or optimisation."""
    out, skip = [], 0
    for a in args:
        if skip:
            skip -= 1
            continue
        if a in ('-MQ', '-MF', '-MT', '-o'):
            skip = 1
            continue
        if a == '-MD' or a.startswith('-fdiagnostics-color') or a == '-fcolor-diagnostics':
            continue
        out.append(a)
    # -fsyntax-only: the errors come from the front end (static_asserts and concepts fire while
    # templates are instantiated, which the front end does); generating code for the control
    # would only cost time (about 40% of each compile).
    return out + ['-O0', '-fsyntax-only', '-fdiagnostics-color=never', '-o', obj]


def main():
    build_dir, case = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(case) as f:
        m = re.search(r'^\s*//\s*expect-error:\s*(.+?)\s*$', f.read(), re.MULTILINE)
    if not m:
        sys.exit(f'{case}: no `// expect-error: TEXT` line')
    expected = [s.strip() for s in m.group(1).split('||') if s.strip()]

    cwd, args = compile_command(build_dir, case)
    # The C locale keeps g++'s quotes ASCII ('operator+', not the typographic ones).
    env = dict(os.environ, LC_ALL='C', LANG='C', LANGUAGE='')
    with tempfile.TemporaryDirectory() as tmp:
        cmd = prepared(args, os.path.join(tmp, 'case.o'))
        control = subprocess.run(cmd + ['-DKAX_COMPILE_FAIL_CONTROL'], cwd=cwd, env=env,
                                 capture_output=True, text=True)
        if control.returncode != 0:
            print(control.stdout + control.stderr)
            sys.exit(f'FAIL {case}: the control (-DKAX_COMPILE_FAIL_CONTROL) does not compile, '
                     'so the case proves nothing')
        bad = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    diag = bad.stdout + bad.stderr
    if bad.returncode == 0:
        sys.exit(f'FAIL {case}: compiled, but must not')
    if not any(e in diag for e in expected):
        print(diag[-20000:])
        sys.exit(f'FAIL {case}: failed to compile, but the diagnostic above contains none of '
                 f'{expected}')
    hit = next(line for line in diag.splitlines() if any(e in line for e in expected))
    print(f'ok {os.path.basename(case)}: does not compile: {hit.strip()}')


if __name__ == '__main__':
    main()
