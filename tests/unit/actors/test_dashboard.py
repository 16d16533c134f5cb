"""The Grafana dashboard (dashboards/raycrawl-grafana.json): a dashboard Grafana loads -- the fields its import
needs, panels that do not overlap, every query with a datasource and a refId -- whose every query names a series
raycrawl exports (actors/metrics.py; tests/e2e/test_cluster_nodes.py reads the same names from a live export)."""

from __future__ import annotations

from conftest import dashboard, dashboard_series

from raycrawl.actors.metrics import exported_series


def test_the_dashboard_is_one_grafana_loads() -> None:
    data = dashboard()
    assert data["title"] and data["uid"] and isinstance(data["schemaVersion"], int) and data["schemaVersion"] >= 30
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    cells: set[tuple[int, int]] = set()
    ids = [p["id"] for p in data["panels"]]
    assert len(ids) == len(set(ids)) >= 8
    for panel in data["panels"]:
        assert panel["type"] in {"timeseries", "stat", "gauge", "table"} and panel["title"]
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs))
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}" and target["expr"].count("(") == target["expr"].count(
                ")"
            )
            assert 'crawl=~"$crawl"' in target["expr"]  # (every query follows the crawl chosen at the top)


def test_every_query_names_a_series_raycrawl_exports() -> None:
    named = dashboard_series()
    assert named - exported_series() == set()
    # and it shows what an operator of an autoscaling crawl watches (issue 31)
    wanted = {"raycrawl_pages_total", "raycrawl_frontier_depth", "raycrawl_hosts_ready", "raycrawl_hosts_waiting",
              "raycrawl_hosts_paused", "raycrawl_fetch_latency_seconds_bucket", "raycrawl_tasks_wanted",
              "raycrawl_tasks_in_flight", "raycrawl_cpus_requested", "raycrawl_nodes"}  # fmt: skip
    assert wanted <= named
