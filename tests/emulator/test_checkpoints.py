"""devstack.mongo.checkpoints: a checkpoint is written by a forked child while the event loop goes on serving.

The child's write is held until the loop itself releases it: if the write ran on the loop (the old way), nothing
else would run and the release would never come."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run in a process of its own: forking is only used where the process has a single thread, as the CLI's has.
SCRIPT = textwrap.dedent("""
    import asyncio, os, sys, time
    from devstack.mongo import checkpoints, persistence

    marker, release = sys.argv[1], sys.argv[2]

    def held_save(rs):
        with open(marker + ".tmp", "w") as out:
            out.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)
        while not os.path.exists(release):
            time.sleep(0.01)

    persistence.save = held_save

    class Config:
        checkpoint_interval = 5

    class ReplicaSet:
        name, dirty, config = "rs0", True, Config()

    async def main():
        rs = ReplicaSet()
        checkpointer = checkpoints.Checkpointer(rs)
        writing = asyncio.create_task(checkpointer.checkpoint())
        turns = 0
        while not os.path.exists(marker):  # the loop runs while the write has started and is held
            await asyncio.sleep(0.01)
            turns += 1
        open(release, "w").close()
        await writing
        print(open(marker).read(), os.getpid(), turns, rs.dirty, checkpointer.child)

    asyncio.run(main())
""")


def test_a_checkpoint_is_written_by_a_child_while_the_loop_serves(tmp_path):
    marker, release = tmp_path / "writer", tmp_path / "release"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), str(release)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    writer, parent, turns, dirty, child = done.stdout.split()
    assert writer != parent and int(turns) >= 1
    assert dirty == "False" and child == "None"  # reaped, and what came before the fork counts as written
