"""`elmo_bilm.utils.progress`: bars redrawn on a terminal, plain lines elsewhere."""

import io
import os
import pty

from elmo_bilm.utils.progress import progress_bar


def test_a_bar_not_on_a_terminal_writes_plain_lines():
    """No carriage return or cursor move (`ESC[A`): each line of a log is a whole bar."""
    stream = io.StringIO()
    with progress_bar(total=3, desc="elmo-embed", unit=" tokens", file=stream) as bar:
        bar.update(1)
        bar.update(2)
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0].startswith("elmo-embed:   0%") and " 0/3 [" in lines[0]
    assert lines[-1].startswith("elmo-embed: 100%") and " 3/3 [" in lines[-1]
    assert len(lines) == 2  # the start and the end: the updates came within the interval


def test_a_status_line_below_another_bar_is_plain_lines_too():
    """A `position=1` status bar (elmo-sweep's run follower) is lines, and clearing it writes
    nothing."""
    stream = io.StringIO()
    bar = progress_bar(total=None, position=1, leave=False, bar_format="{desc}", file=stream)
    bar.set_description_str("  epoch 1 of 2, training")
    bar.close()
    assert stream.getvalue() == "  epoch 1 of 2, training\n"


def test_a_status_set_without_refresh_waits_for_the_interval_when_not_on_a_terminal():
    """As elmo-sweep's follower sets its status each second: a log gets it once an interval."""
    stream = io.StringIO()
    bar = progress_bar(total=None, leave=False, bar_format="{desc}", file=stream)
    for batch in range(5):
        bar.set_description_str(f"batch {batch}", refresh=False)
        bar.update(0)
    assert stream.getvalue() == ""  # the bar starts empty: nothing to show until the interval


def test_a_bar_on_a_terminal_is_redrawn_in_place():
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as terminal:
        with progress_bar(total=2, desc="bar", file=terminal) as bar:
            bar.update(2)
        terminal.flush()
    chunks = []  # everything written, read after the terminal closed (a read may get a part)
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the other side is closed and all was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    text = b"".join(chunks).decode()
    assert "\r" in text and "2/2" in text
