"""Ray's start-up noise off `elmo-embed-corpus`'s stderr, its other lines unchanged, however the
bytes arrive (elmo_bilm.integrations.ray_noise); the fd-level filter catches native writes too."""

import os
import sys

import pytest

from elmo_bilm.integrations.ray_noise import LineFilter, filtered_stderr

# stderr of `elmo-embed-corpus c.txt out --num-workers 2 --top` (Ray 2.60, 300 lines), shortened;
# two real warnings added (`kept`)
BAR0 = "\relmo-embed-corpus:   0%|          | 0/2094 [00:00<?, ? tok/s]"
BAR1 = "\relmo-embed-corpus: 100%|##########| 2094/2094 [00:36<00:00, 57.01 tok/s]"
NOISE = [
    "2026-11-27 07:04:32,889\tWARNING authentication_token_setup.py:85 -- Token authentication is "
    "enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out. For more information, "
    "see https://docs.ray.io/en/latest/ray-security/token-auth.html\n",
    "2026-11-27 07:04:54,845\tINFO streaming_executor.py:215 -- Starting execution of Dataset "
    "dataset_0354_0. Full logs are in /tmp/ray/session_x/logs/ray-data\n",
    "2026-11-27 07:04:54,845\tINFO streaming_executor.py:216 -- Execution plan of Dataset "
    "dataset_0354_0: InputDataBuffer[Input] -> ActorPoolMapOperator[MapBatches(ShardEmbedder)]\n",
    "[2026-11-27 07:04:54,979 E 23880 23880] core_worker.cc:2465: Actor with class name: "
    "'MapWorker(MapBatches(ShardEmbedder))' and ID: '8785ca15' has constructor arguments in the "
    "object store and max_restarts > 0. If the arguments in the object store go out of scope or "
    "are lost, the actor restart will fail. See https://github.com/ray-project/ray/issues/53727 "
    "for more details.\n",
    "2026-11-27 07:04:54,994\tWARNING __init__.py:28 -- Progress bars disabled. To enable, set "
    "`ray.data.DataContext.get_current().enable_progress_bars = True`.\n",
    "2026-11-27 07:05:29,768\tINFO streaming_executor.py:371 -- \u2714\ufe0f  Dataset "
    "dataset_0354_0 execution finished in 34.92 seconds\n",
]
KEPT = [
    "2026-11-27 07:04:33,001\tWARNING authentication_token_setup.py:72 -- Token authentication is "
    "disabled for this Ray cluster. Anyone with network access ...\n",
    "[2026-11-27 07:04:55,001 E 23880 23880] core_worker.cc:999: Failed to connect to the GCS\n",
    "/x/ray/data/operators/actor_pool_map_operator.py:551: UserWarning: The minimum number ...\n",
    '{"shards": 1, "embedded_shards": 1, "sentences": 300}\n',
]
STDERR = (
    NOISE[0]
    + KEPT[0]
    + BAR0
    + NOISE[1]
    + NOISE[2]
    + NOISE[3]
    + KEPT[1]
    + NOISE[4]
    + KEPT[2]
    + NOISE[5]
    + BAR1
    + BAR1
    + "\n"
    + KEPT[3]
).encode()
EXPECTED = (KEPT[0] + BAR0 + KEPT[1] + KEPT[2] + BAR1 + BAR1 + "\n" + KEPT[3]).encode()


@pytest.mark.parametrize("size", [1, 7, 64, len(STDERR)])
def test_the_noise_goes_and_every_other_byte_stays_in_any_chunking(size):
    line_filter = LineFilter()
    out = b"".join(line_filter.feed(STDERR[i : i + size]) for i in range(0, len(STDERR), size))
    assert (out + line_filter.flush()).decode() == EXPECTED.decode()


def test_a_progress_bar_is_written_on_at_once():
    line_filter = LineFilter()
    assert line_filter.feed(BAR0.encode()) == BAR0.encode()
    assert line_filter.feed(b"2026-11") == b""  # may be a Ray log line: held to its end
    assert line_filter.feed(b"-27 07:00:00,000\tINFO x.py:1 -- real\n") == (
        b"2026-11-27 07:00:00,000\tINFO x.py:1 -- real\n"
    )


def test_filtered_stderr_filters_native_writes_to_descriptor_2(capfd):
    with filtered_stderr():
        os.write(2, NOISE[3].encode() + KEPT[1].encode())
        os.write(2, b"unfinished")
    assert capfd.readouterr().err == KEPT[1] + "unfinished"
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_filtered_stderr_filters_python_writes_to_the_current_sys_stderr(capsys):
    with filtered_stderr():
        print(NOISE[0] + KEPT[0], end="", file=sys.stderr)
        sys.stderr.write("unfinished")
    assert capsys.readouterr().err == KEPT[0] + "unfinished"
    assert not hasattr(sys.stderr, "line_filter")
