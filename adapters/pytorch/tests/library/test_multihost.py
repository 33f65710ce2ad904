# SPDX-License-Identifier: Apache-2.0
"""A job across two hosts, made on this machine: two network namespaces joined by a veth pair,
each running `torchrun --nnodes 2` (c10d rendezvous on the first) over gloo on its veth end, each
writing its own ranks' traces to a directory of its own. The bundled job is profiled that way and
`zb import` of both directories gives one profile with every rank; a zbkit order replayed that way
trains as on one host; a host whose processes all die makes the other fail with gloo's "Connection
closed (or reset) by peer [its address]" within seconds. Skipped, with the reason, where namespaces cannot be made (not
root, no iproute2, a sandbox that forbids them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest
from launch import SCRIPT, job_env, require_zb, run, torchrun_command, tune_uniform

pytest.importorskip("torch")

JOB = ["--layers", "4", "--dim", "32", "--heads", "2", "--seq", "16", "--vocab", "64",
       "--batch", "8", "--microbatches", "4", "--warmup", "0"]  # fmt: skip
TIMEOUT_S = 180
LOSS = re.compile(r"rank 1 iter (\d+) time_s \S+ loss (\S+)")


class TwoHosts:
    """Namespaces NAME-0 and NAME-1 with addresses 10.231.N.1 and .2 on a veth pair."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.names = [f"zbkit{tag}h0", f"zbkit{tag}h1"]
        self.links = [f"zbv{tag}h0", f"zbv{tag}h1"]
        subnet = f"10.231.{tag % 250}"
        self.addresses = [f"{subnet}.1", f"{subnet}.2"]
        self.made = False

    def make(self) -> None:
        if os.geteuid() != 0:
            raise RuntimeError("not root: network namespaces need CAP_SYS_ADMIN")
        if shutil.which("ip") is None:
            raise RuntimeError("no `ip` command (iproute2)")
        self.made = True
        steps = [["ip", "netns", "add", self.names[0]], ["ip", "netns", "add", self.names[1]],
                 ["ip", "link", "add", self.links[0], "type", "veth", "peer", "name",
                  self.links[1]]]  # fmt: skip
        for i in range(2):
            steps += [
                ["ip", "link", "set", self.links[i], "netns", self.names[i]],
                ["ip", "-n", self.names[i], "addr", "add", f"{self.addresses[i]}/24", "dev",
                 self.links[i]],
                ["ip", "-n", self.names[i], "link", "set", "lo", "up"],
                ["ip", "-n", self.names[i], "link", "set", self.links[i], "up"],
            ]  # fmt: skip
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(step)}: {done.stderr.strip()}")

    def close(self) -> None:
        if not self.made:
            return
        for name in self.names:
            self.kill_all(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)

    def kill_all(self, name: str) -> None:
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in pids.stdout.split():
            try:
                os.kill(int(pid), 9)
            except (OSError, ValueError):
                pass

    def torchrun(self, host: int, port: int, rdzv_id: str, *script_args: str) -> List[str]:
        """torchrun of the bundled script as node `host` of 2, one rank per host."""
        return [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
            "--nproc-per-node", "1", "--node-rank", str(host), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"{self.addresses[0]}:{port}", "--rdzv-id", rdzv_id,
            # The first host serves the rendezvous store; each agent gives its own address.
            "--rdzv-conf", f"is_host={1 if host == 0 else 0}", "--local-addr",
            self.addresses[host], str(SCRIPT), *script_args,
        ]  # fmt: skip

    def start(self, host: int, command: List[str], log: Path) -> subprocess.Popen:
        env = job_env(GLOO_SOCKET_IFNAME=self.links[host], PYTHONUNBUFFERED="1")
        return subprocess.Popen(["ip", "netns", "exec", self.names[host], *command], env=env,
                                stdout=open(log, "w"), stderr=subprocess.STDOUT)  # fmt: skip


@pytest.fixture(scope="module")
def hosts():
    made = TwoHosts()
    try:
        made.make()
    except RuntimeError as error:
        made.close()
        pytest.skip(f"cannot make two hosts in network namespaces: {error}")
    yield made
    made.close()


def on_both(hosts: TwoHosts, tmp_path: Path, tag: str, command_of) -> List[str]:
    """Runs command_of(host) on both hosts at once; both must succeed. Their outputs."""
    logs = [tmp_path / f"{tag}-host{h}.log" for h in range(2)]
    procs = [hosts.start(h, command_of(h), logs[h]) for h in range(2)]
    try:
        codes = [proc.wait(timeout=TIMEOUT_S) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    outputs = [log.read_text() for log in logs]
    for h in range(2):
        assert codes[h] == 0, f"host {h}:\n{outputs[h][-3000:]}"
    return outputs


def port(offset: int) -> int:
    return 20000 + (os.getpid() * 7 + offset) % 20000


def test_profile_and_replay_across_two_hosts(tmp_path, hosts):
    zb = str(require_zb())
    args = [*JOB, "--iters", "3"]
    shards = [tmp_path / f"host{h}" for h in range(2)]
    on_both(hosts, tmp_path, "profile", lambda h: [
        zb, "profile", "--torch", "--torch-skip", "1", "--torch-iters", "2", "--pp", "2",
        "--shard-dir", str(shards[h]), "--", *hosts.torchrun(h, port(1), "profile", *args),
    ])  # fmt: skip
    # Each host kept only its own rank's trace, and its per-block costs.
    for h in range(2):
        assert sorted(p.name for p in shards[h].iterdir()) == [
            f"rank{h}.blocks.json", f"rank{h}.json.gz",
        ]  # fmt: skip
    costs = tmp_path / "costs.json"
    imported = run([zb, "import", str(shards[0]), str(shards[1]), "--format", "chrome", "--pp",
                    "2", "--json", "--out", str(costs)], job_env())  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["ranks"] == 2 and report["processes"] == 2
    assert {s["stage"]: s["rank"] for s in report["stages"]} == {0: 0, 1: 1}
    for stage in report["stages"]:
        assert stage["F"]["samples"] == 4 * 2, stage
    assert report["costs"]["layout"]["schedule"] == "Schedule1F1B"
    # One import of both hosts' directories merges their blocks in stage order.
    names = [layer["name"] for layer in report["layers"]["layers"]]
    assert names[0] == "stage0.embed" and names[-1] == "stage1.head", names

    # A zbkit order replayed across the two hosts trains as on one host.
    schedule, _ = tune_uniform(tmp_path, "zb-h1")
    outputs = on_both(hosts, tmp_path, "replay", lambda h: [
        zb, "replay", str(schedule), "--", *hosts.torchrun(h, port(2), "replay", *args),
    ])  # fmt: skip
    local = run([zb, "replay", str(schedule), "--", *torchrun_command(*args)], job_env())
    assert local.returncode == 0, local.stderr[-3000:]
    across = LOSS.findall(outputs[1])
    assert len(across) == 3, outputs[1][-2000:]
    assert across == LOSS.findall(local.stdout + local.stderr)


def host_0_after_host_1_vanishes(hosts: TwoHosts, procs: List[subprocess.Popen],
                                 logs: List[Path]) -> Tuple[int, float, float]:  # fmt: skip
    """Once host 0's job printed iteration 3, host 1 vanishes: every process in it, at once.
    Host 0's exit code, when host 1 vanished (time.time()) and how long host 0 took to end; no
    process of either host is left."""
    try:
        deadline = time.monotonic() + 90
        while "iter 3 " not in logs[0].read_text():
            assert procs[0].poll() is None, logs[0].read_text()[-3000:]
            assert time.monotonic() < deadline, "the job never reached iteration 3"
            time.sleep(0.5)
        hosts.kill_all(hosts.names[1])
        vanished, start = time.time(), time.monotonic()
        code = procs[0].wait(timeout=120)
        return code, vanished, time.monotonic() - start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def test_a_host_whose_processes_die_fails_the_other_fast(tmp_path, hosts):
    args = [*JOB, "--iters", "100000", "--pg-timeout-s", "60"]
    logs = [tmp_path / f"host{h}.log" for h in range(2)]
    procs = [hosts.start(h, hosts.torchrun(h, port(3), "vanish", *args), logs[h]) for h in range(2)]
    code, _, took = host_0_after_host_1_vanishes(hosts, procs, logs)
    output = logs[0].read_text()
    assert code != 0
    assert took < 30, f"host 0 took {took:.1f} s to fail"
    # gloo names the peer, as "Connection closed by peer [ADDR]:PORT" or "Read error [ADDR]:PORT:
    # Connection reset by peer", depending on what the dying socket was doing.
    said = [line for line in output.splitlines()
            if re.search(r"Connection (closed|reset) by peer", line)]  # fmt: skip
    assert any(f"[{hosts.addresses[1]}]" in line for line in said), output[-3000:]
    print(f"host 0 failed {took:.1f} s after host 1 vanished")


def test_a_host_gone_is_named_by_the_other_hosts_zb_replay(tmp_path, hosts):
    """The fault suite's host that is gone (docs/stalls.md §5): each host runs its part under
    `zb replay --run-dir` (its own directory); host 1 vanishes mid-run; host 0's zb replay names
    rank 1, and `zb doctor` of both hosts' directories (as one would copy them) too."""
    zb = str(require_zb())
    schedule, _ = tune_uniform(tmp_path, "zb-h1")
    run_dirs = [tmp_path / f"host{h}-run" for h in range(2)]
    args = [*JOB, "--iters", "100000", "--pg-timeout-s", "60"]
    logs = [tmp_path / f"gone-host{h}.log" for h in range(2)]
    procs = [
        hosts.start(h, [zb, "replay", str(schedule), "--run-dir", str(run_dirs[h]),
                        "--stall-timeout", "3", "--on-stall", "kill", "--",
                        *hosts.torchrun(h, port(4), "gone", *args)], logs[h])
        for h in range(2)
    ]  # fmt: skip
    code, gone, _ = host_0_after_host_1_vanishes(hosts, procs, logs)  # its zb replay too
    output = logs[0].read_text()
    assert code != 0
    diagnosis = json.loads((run_dirs[0] / "diagnosis.json").read_text())
    assert diagnosis["culprit"]["rank"] == 1, output[-3000:]
    assert diagnosis["culprit"]["kind"] == "no-record", output[-3000:]
    assert (run_dirs[0] / "diagnosis.json").stat().st_mtime - gone < 60
    assert "zb replay: culprit: rank 1 left no progress record" in output, output[-3000:]
    both = run([zb, "doctor", str(run_dirs[0]), str(run_dirs[1]), "--json"], job_env())
    assert both.returncode == 0, both.stderr
    culprit = json.loads(both.stdout)["culprit"]
    assert (culprit["kind"], culprit["rank"]) == ("died", 1), both.stdout
