import subprocess
import sys
import textwrap

WRITER = textwrap.dedent(
    """
    import sys
    from seqbench.store.opening import open_store
    s = open_store(sys.argv[1])
    for i in range(25):
        run = s.create_run(model="rnn", task="adding", config={"i": i}, config_hash=sys.argv[2])
        s.log_metrics(run.id, [("loss", step, 1.0 / (step + 1)) for step in range(50)])
        s.set_summaries(run.id, {"test_metric": float(i)})
        s.update_run(run.id, status="completed")
    """
)


def test_four_processes_write_one_file_concurrently(tmp_path):
    db = tmp_path / "shared.db"  # brand-new: the four race to create it, too
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), f"p{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    import sqlite3

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("SELECT COUNT(*) FROM runs WHERE status = 'completed'").fetchone() == (100,)
    assert con.execute("SELECT COUNT(*) FROM metrics").fetchone() == (100 * 50,)
    assert con.execute("SELECT COUNT(DISTINCT config_hash) FROM runs").fetchone() == (4,)
    con.close()


def test_a_creator_committing_between_the_two_reads_is_not_taken_for_a_foreign_schema(
    pg_url, monkeypatch
):
    """The race two sweeps started at once on a new PostgreSQL database ran into: the second
    read the version table (absent), the first committed its schema, and the second then saw
    seqbench's tables and refused the store as "not created by seqbench". The creator's commit
    is placed exactly between the two reads; both reads must come from one snapshot."""
    from seqbench.store import engine as store_engine
    from seqbench.store import migrate
    from seqbench.store.engine import inspect_revision
    from seqbench.store.opening import open_store

    read_revision = migrate.current_revision
    created = []

    def revision_then_another_creates(conn):
        rev = read_revision(conn)
        if not created:
            created.append(None)
            monkeypatch.undo()  # the other process reads without the hook
            created[0] = open_store(pg_url)  # creates the schema and commits
        return rev

    monkeypatch.setattr(store_engine.migrate, "current_revision", revision_then_another_creates)
    assert inspect_revision(pg_url) == (None, False)  # the world as the first read saw it
    created[0].dispose()
    assert inspect_revision(pg_url) == (migrate.head_revision(), True)
    open_store(pg_url).dispose()  # and the second opener takes the store as it is now
