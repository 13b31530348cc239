"""Isolation round four (issue 37): host metadata, channels between episodes, hidden paths, bounded storage.

Each test performs the attack for real from a confined kernel (or a terminal command) and fails if it
gets through:
1. Metadata of host files: chmod, chown, utime and setxattr of a root-only file in a 0700 host folder no
   sandbox rule covers, of the task's oracle, and of the shared runtime folder are refused, and nothing
   on the host changes (the program runs as an unprivileged uid of its own; host paths are either absent
   from its view or mounted read-only). A second episode still works afterwards.
2. Channels between episodes: a `user.*` xattr on any host folder the sandbox can see, and a key in the
   uid keyring (`add_key`), cannot be stored; episode B finds nothing of episode A.
3. Seeing what may not be opened: `stat` of the oracle, the verifier, the database, another episode's
   workspace and the runtime folder gives ENOENT (a private mount namespace); inotify and fanotify are
   refused by seccomp, as are the other calls `kernel_side/seccomp.py` lists.
4. Host disk: `fallocate` of 1.5 GiB in the private tmp fails (a bounded tmpfs), the observation says the
   storage is full, and the host's root filesystem did not grow; so does making more files than allowed.
"""
import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from progagent_lib.runtime import PTCRuntime, run_terminal
from progagent_lib.runtime import sandbox as sandbox_module
from progagent_lib.runtime.kernel_side import seccomp

GiB = 1 << 30
MiB = 1 << 20
ERRNO_CODE = ("import ctypes, errno, os\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
              "def call(nr, *args):\n    ctypes.set_errno(0)\n    rc = libc.syscall(nr, *args)\n"
              "    return 'ok' if rc >= 0 else errno.errorcode[ctypes.get_errno()]\n"
              "def attempt(f, *a):\n    try:\n        f(*a)\n        return 'ok'\n"
              "    except OSError as e:\n        return errno.errorcode.get(e.errno, str(e.errno))\n")


@pytest.fixture(scope="module")
def second_episode(restock_task):
    env = restock_task.instantiate("v0", 1)
    yield env
    env.close()


@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=30, memory_limit=2 * GiB, max_output_chars=8000) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def rt_b(second_episode):
    with PTCRuntime(second_episode, timeout=30, memory_limit=2 * GiB, max_output_chars=8000) as runtime:
        yield runtime


@pytest.fixture(autouse=True)
def runtime_folder_restored():
    """Where a guard is missing the attacks succeed (checked against the code before round four): put the
    shared runtime folder's mode back, so that one failure does not take every later test with it."""
    root = sandbox_module.RUNTIME_ROOT
    mode = stat.S_IMODE(os.stat(root).st_mode) if root.exists() else 0o700
    yield
    if root.exists():
        os.chmod(root, mode)


@pytest.fixture()
def host_secret():
    """A root-only 0600 file in a 0700 folder that no sandbox rule covers (beside the task's oracle)."""
    folder = Path(tempfile.mkdtemp(prefix="host-secret-"))
    folder.chmod(0o700)
    secret = folder / "secret.txt"
    secret.write_text("host secret\n")
    secret.chmod(0o600)
    yield secret
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def metadata(path: Path) -> tuple:
    info = os.lstat(path)
    return info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, tuple(sorted(os.listxattr(path, follow_symlinks=False)))


def run(rt, code: str) -> dict[str, str]:
    """Run `code` (which prints `key value` lines) and return them as a dict."""
    result = rt.execute(ERRNO_CODE + code)
    assert result.error is None, result.observation
    return dict(line.split(" ", 1) for line in result.output.strip().splitlines())


METADATA_ATTACK = """
for i, p in enumerate({paths!r}):
    print(f'chmod{{i}}', attempt(os.chmod, p, 0o4777))
    print(f'chown{{i}}', attempt(os.chown, p, os.getuid(), os.getgid()))
    print(f'utime{{i}}', attempt(os.utime, p, (0, 0)))
    print(f'touch{{i}}', attempt(os.utime, p, None))
    print(f'xattr{{i}}', attempt(os.setxattr, p, 'user.channel', b'from-episode-a'))
"""


# --- 1. metadata of host files ---------------------------------------------------------------------------------
def restore(paths):
    """Where a guard is missing the attack changes host files: put their mode, owner and times back."""
    for path, (mode, uid, gid, mtime, _) in list(zip(paths, _saved.pop("metadata", []))):
        os.chown(path, uid, gid, follow_symlinks=False)
        os.chmod(path, stat.S_IMODE(mode))
        os.utime(path, ns=(mtime, mtime))
    channel_removed(paths)


_saved: dict = {}


def test_a_program_cannot_change_the_metadata_of_host_files(rt, restock_task, host_secret, request):
    oracle = restock_task.root / "oracle.py"
    runtime_root = sandbox_module.RUNTIME_ROOT
    own_root = rt.session.sandbox.root
    targets = [host_secret, host_secret.parent, oracle, restock_task.root, runtime_root, own_root,
               own_root / "lib", Path(os.path.realpath("/usr/bin/python3"))]
    before = _saved["metadata"] = [metadata(p) for p in targets]
    request.addfinalizer(lambda: restore(targets))
    outcome = run(rt, METADATA_ATTACK.format(paths=[str(p) for p in targets]))
    assert not [k for k, v in outcome.items() if v == "ok"], outcome
    assert [metadata(p) for p in targets] == before
    assert os.getuid() == 0 and os.stat(host_secret).st_mode & 0o777 == 0o600


def test_the_program_runs_as_an_unprivileged_uid_of_its_own(rt, rt_b):
    ids = [run(r, "print('ids', os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")["ids"] for r in (rt, rt_b)]
    uid_a, uid_b = (int(i.split()[0]) for i in ids)
    assert uid_a != 0 and uid_b != 0 and uid_a != uid_b, ids
    status = run(rt, "print('caps', [l.split()[1] for l in open('/dev/null')] or 'none')\n"
                     "print('setuid0', attempt(os.setuid, 0))")
    assert status["setuid0"] == "EPERM"


def test_the_runtime_folder_cannot_be_locked_for_other_episodes(rt, rt_b, second_episode):
    runtime_root, own_root = sandbox_module.RUNTIME_ROOT, rt.session.sandbox.root
    outcome = run(rt, f"print('root', attempt(os.chmod, {str(runtime_root)!r}, 0))\n"
                      f"print('own', attempt(os.chmod, {str(own_root)!r}, 0))")
    assert set(outcome.values()) <= {"EPERM", "EROFS"}, outcome  # not its own, and on the view's read-only root
    # Episode B still writes its tmp and runs a terminal command; a new episode still starts.
    assert run(rt_b, "open(os.environ['TMPDIR'] + '/x', 'w').write('ok')\nprint('tmp', 'ok')") == {"tmp": "ok"}
    assert rt_b.terminal("echo hi > $TMPDIR/y && cat $TMPDIR/y").output.strip() == "hi"
    with PTCRuntime(second_episode, timeout=30, memory_limit=2 * GiB) as fresh:
        assert fresh.execute("print(1 + 1)").output.strip() == "2"


def test_a_terminal_command_cannot_change_host_metadata(episode, host_secret):
    before = metadata(host_secret)
    result = run_terminal(episode.workspace, f"chmod 4777 {host_secret}; touch -d 2000-01-01 {host_secret}; "
                                             f"chmod 0 {sandbox_module.RUNTIME_ROOT}; echo done")
    assert result.output.strip().endswith("done")
    assert metadata(host_secret) == before
    assert stat.S_IMODE(os.stat(sandbox_module.RUNTIME_ROOT).st_mode) == 0o700


# --- 2. channels between episodes ------------------------------------------------------------------------------
def channel_removed(paths):
    """Where the guard is missing the attack writes to the host: take the xattr off again after the test."""
    for path in paths:
        try:
            os.removexattr(path, "user.channel")
        except OSError:
            pass


def test_no_xattr_channel_between_episodes(rt, rt_b, request):
    folders = ["/usr", "/tmp", str(sandbox_module.RUNTIME_ROOT), str(rt.session.sandbox.root),
               str(rt.session.sandbox.root / "lib"), "/dev/null"]
    channel_removed(folders)
    request.addfinalizer(lambda: channel_removed(folders))
    stored = run(rt, "".join(f"print('set{i}', attempt(os.setxattr, {p!r}, 'user.channel', b'secret-a'))\n"
                             for i, p in enumerate(folders)))
    assert set(stored.values()) <= {"EPERM", "EROFS", "EACCES", "ENOENT", "ENOTSUP", "EOPNOTSUPP"}, stored
    read = run(rt_b, "".join(f"print('get{i}', repr(os.getxattr({p!r}, 'user.channel')) if os.path.exists({p!r}) "
                             f"and 'user.channel' in os.listxattr({p!r}) else 'none')\n" for i, p in enumerate(folders)))
    assert set(read.values()) == {"none"}, read


def test_no_keyring_channel_between_episodes(rt, rt_b):
    nr = seccomp._SECCOMP_ARCH[os.uname().machine]["crossing"]
    stored = run(rt, f"print('add_key', call({nr['add_key']}, b'user', b'channel', b'secret-a', 6, -4))\n"  # the user keyring
                     f"print('keyctl', call({nr['keyctl']}, 0, -4, 0))\n"  # KEYCTL_GET_KEYRING_ID
                     f"print('request_key', call({nr['request_key']}, b'user', b'channel', None, 0))")
    assert stored == {"add_key": "EPERM", "keyctl": "EPERM", "request_key": "EPERM"}, stored
    found = run(rt_b, f"print('request_key', call({nr['request_key']}, b'user', b'channel', None, 0))")
    assert found == {"request_key": "EPERM"}


# --- 3. seeing what may not be opened --------------------------------------------------------------------------
def test_hidden_paths_do_not_exist_in_the_sandbox(rt, rt_b, episode, second_episode, restock_task):
    hidden = [restock_task.root / "oracle.py", restock_task.root / "environment.py", restock_task.root,
              episode.db_path, second_episode.workspace, second_episode.db_path, rt_b.session.sandbox.root,
              rt_b.session.sandbox.ipc / "kernel.json", sandbox_module.RUNTIME_ROOT / "ids",
              Path(__file__).resolve().parents[2] / "progagent_lib", Path("/etc/shadow"), Path("/root/.bash_history")]
    assert all(os.path.lexists(p) for p in hidden[:10])
    seen = run(rt, "".join(f"print('stat{i}', attempt(os.stat, {str(p)!r}))\n" for i, p in enumerate(hidden)))
    assert set(seen.values()) == {"ENOENT"}, {str(hidden[int(k[4:])]): v for k, v in seen.items() if v != "ENOENT"}
    listing = run(rt, f"print('root', sorted(os.listdir('/')) if attempt(os.listdir, '/') == 'ok' else 'refused')")
    assert "work" not in listing["root"] or listing["root"] == "refused"


def test_a_terminal_sees_only_its_view(episode, second_episode):
    result = run_terminal(episode.workspace, f"stat {second_episode.workspace} {second_episode.db_path} "
                                             f"{sandbox_module.RUNTIME_ROOT}/ids 2>&1 | grep -c 'No such file'")
    assert result.output.strip() == "3", result.output


def test_inotify_fanotify_and_other_crossing_calls_are_refused(rt, second_episode):
    nr = seccomp._SECCOMP_ARCH[os.uname().machine]["crossing"]
    calls = {"inotify_init1": (0,), "fanotify_init": (0, 0), "perf_event_open": (None, 0, -1, -1, 0), "bpf": (0, None, 0),
             "userfaultfd": (0,), "syslog": (3, None, 0), "ptrace": (0, 1, 0, 0), "name_to_handle_at": (-100, b"/", None, None, 0),
             "kcmp": (1, 1, 0, 0, 0)}
    outcome = run(rt, "".join(f"print({name!r}, call({nr[name]}, *{args!r}))\n" for name, args in calls.items()))
    assert outcome == {name: "EPERM" for name in calls}, outcome
    # The watch itself, as a program would try it: inotify from Python's ctypes on another episode's workspace.
    watch = run(rt, f"fd = libc.inotify_init1(0)\nprint('fd', fd)")
    assert watch == {"fd": "-1"}


def test_the_filter_lists_every_crossing_call_with_its_number_on_both_machines():
    for machine, numbers in seccomp._SECCOMP_ARCH.items():
        program = seccomp.seccomp_program(machine)
        refused = {k for (code, jt, jf, k) in program if code == 0x15}
        assert set(numbers["crossing"].values()) <= refused, machine
        assert {"add_key", "keyctl", "request_key", "inotify_init1", "fanotify_init"} <= set(numbers["crossing"])


# --- 4. bounded storage ----------------------------------------------------------------------------------------
def root_fs_used() -> int:
    info = os.statvfs("/")
    return (info.f_blocks - info.f_bfree) * info.f_frsize


def test_tmp_exhaustion_is_bounded_and_said(rt):
    before = root_fs_used()
    # 1.5 GiB in four files (RLIMIT_FSIZE bounds each file to 512 MiB, not their sum).
    result = rt.execute("import os\nfor i in range(4):\n"
                        "    fd = os.open(os.environ['TMPDIR'] + f'/big{i}', os.O_WRONLY | os.O_CREAT)\n"
                        "    try:\n        os.posix_fallocate(fd, 0, 384 << 20)\n    finally:\n        os.close(fd)")
    assert result.error is not None and "No space left on device" in result.observation, result.observation
    assert "storage is full" in result.observation and "delete files" in result.observation
    assert root_fs_used() - before < 64 * MiB
    cleanup = rt.execute("import glob\nfor f in glob.glob(os.environ['TMPDIR'] + '/big*'):\n    os.unlink(f)")
    assert cleanup.error is None
    many = rt.execute("import os\nd = os.environ['TMPDIR'] + '/many'\nos.makedirs(d, exist_ok=True)\n"
                      "for i in range(20000):\n    open(f'{d}/{i}', 'w').close()")
    assert many.error is not None and "No space left on device" in many.observation
    assert rt.execute("import shutil; shutil.rmtree(d); print('ok')").output.strip() == "ok"


def test_a_terminal_cannot_fill_the_host_disk(episode):
    before = root_fs_used()
    result = run_terminal(episode.workspace, "for i in 1 2 3 4; do fallocate -l 384M $TMPDIR/big$i || echo full; done")
    assert "full" in result.output and "No space left on device" in result.output, result.output
    assert root_fs_used() - before < 64 * MiB


# --- bad input: a machine where a wall cannot be built refuses, naming what is missing --------------------------
def test_a_uid_range_that_clashes_with_a_user_refuses_to_start(episode, monkeypatch):
    from progagent_lib.runtime import SandboxUnavailable

    nobody = next(int(line.split(":")[2]) for line in Path("/etc/passwd").read_text().splitlines()
                  if line.split(":")[2].isdigit() and int(line.split(":")[2]) >= 1000)
    monkeypatch.setenv("PROGAGENT_SANDBOX_UIDS", f"{nobody}:10")
    with pytest.raises(SandboxUnavailable, match=r"/etc/passwd has id .* PROGAGENT_SANDBOX_UIDS"):
        PTCRuntime(episode, timeout=10)
    monkeypatch.setenv("PROGAGENT_SANDBOX_UIDS", "not-a-range")
    with pytest.raises(SandboxUnavailable, match="START:COUNT"):
        run_terminal(episode.workspace, "true")


def test_a_range_with_every_uid_leased_refuses_to_start(episode, monkeypatch):
    from progagent_lib.runtime import SandboxUnavailable

    monkeypatch.setenv("PROGAGENT_SANDBOX_UIDS", "1879000000:1")
    with PTCRuntime(episode, timeout=10) as holder:
        assert holder.execute("import os; print(os.getuid())").output.strip() == "1879000000"
        with pytest.raises(SandboxUnavailable, match="all 1 sandbox uids .* are leased"):
            run_terminal(episode.workspace, "true")
    # released with its sandbox: the next one gets it
    assert run_terminal(episode.workspace, "id -u").output.strip() == "1879000000"


def test_a_lent_workspace_is_given_back_to_its_owner(tmp_path, restock_task):
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "a.txt").write_text("a")
    result = run_terminal(workspace, "id -u; stat -c %u docs/a.txt; mkdir -p made/deeper && echo b > made/deeper/b.txt")
    sandbox_uid, seen_owner = result.output.split()[:2]
    assert sandbox_uid == seen_owner != "0", result.output  # the program owned its workspace while it ran
    owners = {os.lstat(p).st_uid for p in [workspace, *workspace.rglob("*")]}
    assert owners == {0}, owners  # and every file, its own included, is the owner's again
    env = restock_task.instantiate("v0", 2)
    try:
        with PTCRuntime(env, timeout=30) as runtime:
            assert runtime.execute("open('mine.txt', 'w').write('x')").error is None
        assert {os.lstat(p).st_uid for p in [env.workspace, *env.workspace.rglob("*")]} == {0}
    finally:
        env.close()


def test_what_the_tools_write_belongs_to_the_program(restock_task):
    env = restock_task.instantiate("v0", 3)
    try:
        with PTCRuntime(env, timeout=30) as runtime:
            runtime.execute("tools.write_file(path='notes/from_tool.md', content='by the host')")
            changed = runtime.execute("open('notes/from_tool.md', 'a').write(' and the program')\n"
                                      "print(open('notes/from_tool.md').read())")
            assert changed.error is None and changed.output.strip() == "by the host and the program", changed.observation
    finally:
        env.close()
