"""The storage tool's output kept as a template (harness.db.mode.kraft_format): a node
formatted from it gets the template's bootstrap.checkpoint and its own ids in meta.properties."""

from __future__ import annotations

from pathlib import Path

from harness.db.mode.kraft_format import copy_format, keep_format

META = "#\n#Fri Nov 27 18:07:40 UTC 2026\nnode.id=0\ndirectory.id=xtFjV0PP5Dm4si7vvnaddw\nversion=1\ncluster.id=eJbCcrzoQPuxPHqI7S0G9A\n"  # noqa: E501


def test_a_node_formatted_from_the_template_has_its_own_ids(tmp_path: Path) -> None:
    tool = tmp_path / "controller"
    tool.mkdir()
    (tool / "meta.properties").write_text(META)
    (tool / "bootstrap.checkpoint").write_bytes(b"\x00\x01records")
    template = tmp_path / "cache" / "kraft-format" / "k"
    assert not copy_format(template, tmp_path, 1, "x")  # no template yet: the tool runs
    keep_format(tool, template)
    node = tmp_path / "A"
    node.mkdir()
    assert copy_format(template, node, 1, "run-cluster-id")
    assert (node / "bootstrap.checkpoint").read_bytes() == b"\x00\x01records"
    props = dict(
        line.split("=", 1)
        for line in (node / "meta.properties").read_text().splitlines()
        if "=" in line
    )
    assert props["node.id"] == "1" and props["cluster.id"] == "run-cluster-id"
    assert props["version"] == "1"
    assert props["directory.id"] not in ("xtFjV0PP5Dm4si7vvnaddw", "")
    other = tmp_path / "B"
    other.mkdir()
    copy_format(template, other, 2, "run-cluster-id")
    assert "directory.id" in (other / "meta.properties").read_text()
    assert (other / "meta.properties").read_text() != (node / "meta.properties").read_text()


def test_a_tree_without_directory_ids_gets_none(tmp_path: Path) -> None:
    template = tmp_path / "t"
    template.mkdir()
    (template / "meta.properties").write_text("node.id=0\nversion=1\ncluster.id=c\n")
    (template / "bootstrap.checkpoint").write_bytes(b"x")
    assert copy_format(template, tmp_path, 3, "d")
    assert (tmp_path / "meta.properties").read_text() == "node.id=3\nversion=1\ncluster.id=d\n"
