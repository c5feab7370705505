#!/usr/bin/env python3
"""Generates the adaptd Grafana dashboard and the ConfigMap that provisions it.

    python3 deploy/grafana/generate.py          # rewrites the two files beside this script
    python3 deploy/grafana/generate.py --check  # exits 1 when they differ from what it makes

adaptd-dashboard.json is the dashboard (import it in Grafana, or let the sidecar load it);
adaptd-dashboard-configmap.yaml wraps it in a ConfigMap labelled grafana_dashboard: "1" for
Grafana's dashboard sidecar. Edit this script, not the generated files.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
JSON_PATH = os.path.join(HERE, "adaptd-dashboard.json")
CONFIGMAP_PATH = os.path.join(HERE, "adaptd-dashboard-configmap.yaml")

W = "$__rate_interval"
SERVER_ERRORS = 'code=~"UNKNOWN|INTERNAL|UNAVAILABLE|DATA_LOSS|DEADLINE_EXCEEDED"'
SEL = 'job=~"$job"'
# etcd's members as Prometheus scrapes them (their own job; the $etcd_job variable).
ETCD_SEL = 'job=~"$etcd_job"'
# The shards of a cluster on etcd (docs/CLUSTER_ETCD.md, "Shards").
SHARDS = 4096


def q(expr, legend):
    return {"expr": expr, "legendFormat": legend}


def quantiles(metric, by, legend_prefix):
    by_le = ", ".join(by + ["le"])
    targets = []
    for p in ("0.5", "0.9", "0.99"):
        label = "p" + p[2:].ljust(2, "0") if p != "0.5" else "p50"
        legend = (legend_prefix + " " if legend_prefix else "") + label
        targets.append(q('histogram_quantile(%s, sum by (%s) (rate(%s_bucket{%s}[%s])))'
                         % (p, by_le, metric, SEL, W), legend))
    return targets


# (row title, [(panel title, description, unit, targets)])
ROWS = [
    ("Traffic and errors", [
        ("Requests by method", "Finished calls per second, by method (both transports).",
         "reqps",
         [q('sum by (method) (rate(adaptd_requests_total{%s}[%s]))' % (SEL, W), "{{method}}")]),
        ("Requests by status code", "Finished RPCs per second, by gRPC status code.", "reqps",
         [q('sum by (code) (rate(adaptd_requests_total{%s}[%s]))' % (SEL, W), "{{code}}")]),
        ("Server error ratio",
         "Share of RPCs that ended with a server-side code (UNKNOWN, INTERNAL, UNAVAILABLE, "
         "DATA_LOSS, DEADLINE_EXCEEDED). Caller mistakes (INVALID_ARGUMENT, NOT_FOUND, ...) "
         "are not errors of the service.", "percentunit",
         [q('(sum(rate(adaptd_requests_total{%s,%s}[%s])) or vector(0)) / '
            'sum(rate(adaptd_requests_total{%s}[%s]))' % (SEL, SERVER_ERRORS, W, SEL, W),
            "server errors")]),
        ("Requests by transport",
         "Finished calls per second, by the front end they came over: grpc, or http (the "
         "HTTP/JSON front end, docs/HTTP.md).", "reqps",
         [q('sum by (transport) (rate(adaptd_requests_total{%s}[%s]))' % (SEL, W),
            "{{transport}}")]),
        ("Server error ratio by transport",
         "The server error ratio above, per transport: a failure of one front end alone shows "
         "here first.", "percentunit",
         [q('(sum by (transport) (rate(adaptd_requests_total{%s,%s}[%s])) or '
            'sum by (transport) (rate(adaptd_requests_total{%s}[%s])) * 0) / '
            'sum by (transport) (rate(adaptd_requests_total{%s}[%s]))'
            % (SEL, SERVER_ERRORS, W, SEL, W, SEL, W), "{{transport}}")]),
        ("Examples ingested by kind", "Examples committed per second, by store kind.", "short",
         [q('sum by (kind) (rate(adaptd_examples_ingested_total{%s}[%s]))' % (SEL, W),
            "{{kind}}")]),
        ("Examples ingested by tenant",
         "Per tenant: tenants on the allow-list or the busiest K; the rest are 'other'.",
         "short",
         [q('sum by (tenant) (rate(adaptd_tenant_examples_ingested_total{%s}[%s]))' % (SEL, W),
            "{{tenant}}")]),
        ("Predictions by tenant", "Inputs predicted per second, by tenant (bounded as above).",
         "short",
         [q('sum by (tenant) (rate(adaptd_tenant_predictions_total{%s}[%s]))' % (SEL, W),
            "{{tenant}}")]),
    ]),
    ("Latency", [
        ("Request latency by method",
         "Percentiles of the time from a call's arrival to its final status.", "s",
         quantiles("adaptd_request_duration_seconds", ["method"], "{{method}}")),
        ("Request latency by transport",
         "Percentiles of the time from a call's arrival to its final status, all methods, by "
         "transport (grpc, http).", "s",
         quantiles("adaptd_request_duration_seconds", ["transport"], "{{transport}}")),
        ("Compile duration", "Percentiles of store compile times (explicit and automatic).",
         "s", quantiles("adaptd_compile_duration_seconds", [], "")),
        ("Compiles by trigger and result", "Compiles per second.", "short",
         [q('sum by (trigger, result) (rate(adaptd_compiles_total{%s}[%s]))' % (SEL, W),
            "{{trigger}} {{result}}")]),
    ]),
    ("Queueing and batching", [
        ("Queue depth", "Request work items waiting for a worker, sampled at each scrape.",
         "short", [q('sum by (instance) (adaptd_queue_depth{%s})' % SEL, "{{instance}}")]),
        ("Queue time", "Percentiles of the wait between a request's arrival at the request "
         "queue and the start of its work.", "s",
         quantiles("adaptd_queue_time_seconds", [], "")),
        ("Batch size", "Mean items per request: inputs of a Predict, examples of one Adapt "
         "or Forget message.", "short",
         [q('sum by (method) (rate(adaptd_batch_size_sum{%s}[%s])) / '
            'sum by (method) (rate(adaptd_batch_size_count{%s}[%s]))' % (SEL, W, SEL, W),
            "{{method}}")]),
        ("Log fsync latency", "p99 of write-ahead log fsync; empty (NaN) while no fsync ran.",
         "s", [q('histogram_quantile(0.99, sum by (le) (rate('
                 'adaptd_log_fsync_duration_seconds_bucket{%s}[%s])))' % (SEL, W), "p99")]),
    ]),
    ("Adaptation quality", [
        ("Prequential accuracy by kind",
         "Label stores: share of adapted examples whose top-1 prediction was right before "
         "the example was learned.", "percentunit",
         [q('sum by (kind) (rate(adaptd_prequential_correct_total{%s,output="labels"}[%s])) / '
            'sum by (kind) (rate(adaptd_prequential_evaluated_total{%s,output="labels"}[%s]))'
            % (SEL, W, SEL, W), "{{kind}}")]),
        ("Prequential accuracy by tenant", "As above, per tenant (bounded).", "percentunit",
         [q('sum by (tenant) (rate(adaptd_prequential_correct_total{%s,output="labels"}[%s])) / '
            'sum by (tenant) (rate(adaptd_prequential_evaluated_total{%s,output="labels"}[%s]))'
            % (SEL, W, SEL, W), "{{tenant}}")]),
        ("Prequential loss by kind",
         "Mean loss before the update: misses for label stores, squared error / M for vector "
         "stores.", "short",
         [q('sum by (kind, output) (rate(adaptd_prequential_loss_total{%s}[%s])) / '
            'sum by (kind, output) (rate(adaptd_prequential_evaluated_total{%s}[%s]))'
            % (SEL, W, SEL, W), "{{kind}} {{output}}")]),
        ("faast at the last compile",
         "Effective rank (directions kept) and condition number over the kept directions.",
         "short",
         [q('max by (instance) (adaptd_faast_effective_rank{%s})' % SEL, "effective rank"),
          q('max by (instance) (adaptd_faast_condition_number{%s})' % SEL, "condition number")]),
        ("faast spectral cut-off", "Relative singular-value cut-off of the last compile.",
         "short", [q('max by (instance) (adaptd_faast_cutoff_ratio{%s})' % SEL, "cut-off")]),
        ("falcon residual norm", "Moving average of the residual norm before each write, "
         "mean and max over falcon stores.", "short",
         [q('max by (aggregate) (adaptd_falcon_residual_norm{%s})' % SEL, "{{aggregate}}")]),
        ("fwpkm slot usage", "Share of fwpkm slots written at least once.", "percentunit",
         [q('sum(adaptd_fwpkm_slots_used{%s}) / sum(adaptd_fwpkm_slots{%s})' % (SEL, SEL),
            "slots used")]),
        ("fwpkm addressing entropy", "Entropy (nats) of the mean addressing distribution, "
         "mean and min over fwpkm stores.", "short",
         [q('min by (aggregate) (adaptd_fwpkm_addressing_entropy_nats{%s})' % SEL,
            "{{aggregate}}")]),
    ]),
    ("Feedback and served accuracy", [
        ("Served against prequential accuracy by tenant",
         "Label stores with a feedback window: the share of served predictions whose top-1 "
         "label feedback confirmed (served), beside the prequential accuracy (before each "
         "update), per tenant (bounded).", "percentunit",
         [q('sum by (tenant) (rate(adaptd_served_predictions_correct_total{%s}[%s])) / '
            'sum by (tenant) (rate(adaptd_served_predictions_evaluated_total{%s}[%s]))'
            % (SEL, W, SEL, W), "{{tenant}} served"),
          q('sum by (tenant) (rate(adaptd_prequential_correct_total{%s,output="labels"}[%s])) / '
            'sum by (tenant) (rate(adaptd_prequential_evaluated_total{%s,output="labels"}[%s]))'
            % (SEL, W, SEL, W), "{{tenant}} prequential")]),
        ("Feedback items by result", "Feedback items per second: applied, or duplicate "
         "(resent, skipped).", "short",
         [q('sum by (result) (rate(adaptd_feedback_items_total{%s}[%s]))' % (SEL, W),
            "{{result}}")]),
        ("Feedback delay by tenant",
         "Mean seconds from a prediction to its applied feedback, per tenant (bounded).", "s",
         [q('sum by (tenant) (rate(adaptd_feedback_delay_seconds_total{%s}[%s])) / '
            'sum by (tenant) (rate(adaptd_feedback_items_total{%s,result="applied"}[%s]))'
            % (SEL, W, SEL, W), "{{tenant}}")]),
        ("Remembered predictions' memory",
         "Bytes the predictions remembered for feedback hold, in all and per tenant (bounded); "
         "dropped first under the memory budget and the tenant's quota.", "bytes",
         [q('sum(adaptd_remembered_prediction_bytes{%s})' % SEL, "remembered"),
          q('sum by (tenant) (adaptd_tenant_remembered_prediction_bytes{%s})' % SEL,
            "{{tenant}}")]),
        ("Remembered predictions dropped by reason",
         "Remembered predictions dropped per second: window (a newer one took the place), age "
         "(older than the window) and pressure (the memory budget or the tenant's quota). "
         "Feedback on a dropped one is NOT_FOUND.", "short",
         [q('sum by (reason) (rate(adaptd_remembered_predictions_dropped_total{%s}[%s]))'
            % (SEL, W), "{{reason}}")]),
    ]),
    ("Stores and memory", [
        ("Stores by kind", "Stores hosted.", "short",
         [q('sum by (kind) (adaptd_stores{%s})' % SEL, "{{kind}}")]),
        ("Store memory by kind", "Sum of StoreInfo.memory_bytes over the stores of each kind.",
         "bytes", [q('sum by (kind) (adaptd_memory_bytes{%s})' % SEL, "{{kind}}")]),
    ]),
    # Zero (latencies NaN) on servers without --etcd-endpoints (docs/DURABLE_LOG.md).
    ("Durable log (etcd and object storage)", [
        ("Commit latency",
         "Percentiles of one group transaction of the durable log in etcd: what an "
         "acknowledged Adapt waits for.", "s",
         quantiles("adaptd_durable_log_commit_duration_seconds", [], "")),
        ("Records committed", "Log records committed to etcd per second, and the group "
         "transactions that carried them.", "short",
         [q('sum(rate(adaptd_durable_log_committed_records_total{%s}[%s]))' % (SEL, W),
            "records"),
          q('sum(rate(adaptd_durable_log_commit_duration_seconds_count{%s}[%s]))' % (SEL, W),
            "transactions")]),
        ("Objects written by kind",
         "Objects written to object storage per second: payload (a record past 64 KiB), state "
         "(a stored state) and readout, by result.", "short",
         [q('sum by (what, result) (rate(adaptd_durable_log_objects_total{%s}[%s]))'
            % (SEL, W), "{{what}} {{result}}")]),
        ("Object bytes by kind", "Bytes written to object storage per second, by kind.", "Bps",
         [q('sum by (what) (rate(adaptd_durable_log_object_bytes_total{%s}[%s]))' % (SEL, W),
            "{{what}}")]),
        ("Errors by service", "Failed calls of the durable log per second: etcd, or s3 (object "
         "storage).", "short",
         [q('sum by (service) (rate(adaptd_durable_log_errors_total{%s}[%s]))' % (SEL, W),
            "{{service}}")]),
        ("Fence failures",
         "Appends refused because another server holds the claim on the prefix; any is an "
         "incident.", "short",
         [q('sum by (instance) (increase(adaptd_durable_log_fence_failures_total{%s}[%s]))'
            % (SEL, W), "{{instance}}")]),
        ("Restores", "Stores rebuilt from their stored state and the log per second, and the "
         "p99 of the time one takes.", "short",
         [q('sum(rate(adaptd_durable_log_restores_total{%s}[%s]))' % (SEL, W), "restores/s"),
          q('histogram_quantile(0.99, sum by (le) (rate('
            'adaptd_durable_log_restore_duration_seconds_bucket{%s}[%s])))' % (SEL, W),
            "p99 seconds")]),
        ("Snapshot lag",
         "Age of the oldest change not yet in object storage, per server, sampled at scrape; "
         "a start-up replays the log after it.", "s",
         [q('max by (instance) (adaptd_durable_log_snapshot_lag_seconds{%s})' % SEL,
            "{{instance}}")]),
        ("etcd space against the guard",
         "etcd's largest member database as a share of its --quota-backend-bytes (which "
         "durableLog.etcdQuotaBytes must equal), from etcd's own metrics (Prometheus scrapes "
         "etcd's members; pick their job in $etcd_job). At 80% the space guard refuses writes "
         "RESOURCE_EXHAUSTED until snapshots trim the log and etcd is compacted and "
         "defragmented; AdaptdEtcdSpaceNearGuard fires above 70% for 5 minutes.",
         "percentunit",
         [q('max by (job) (etcd_mvcc_db_total_size_in_bytes{%s}) / on (job) '
            'max by (job) (etcd_server_quota_backend_bytes{%s})' % (ETCD_SEL, ETCD_SEL),
            "{{job}} largest member"),
          q('vector(0.7)', "alert (70%)"),
          q('vector(0.8)', "guard: writes refused (80%)")]),
    ]),
    # Zero (latencies NaN) on servers that are no member of a cluster on etcd
    # (docs/CLUSTER_ETCD.md).
    ("Cluster on etcd", [
        ("Shards per member",
         "Shards each member holds by its claims in etcd, and of those the ones its engine has "
         "opened; the shards no member holds, as each member sees the claims (their stores "
         "answer UNAVAILABLE).", "short",
         [q('sum by (instance) (adaptd_cluster_shards{%s,state="held"})' % SEL,
            "{{instance}} held"),
          q('sum by (instance) (adaptd_cluster_shards{%s,state="adopted"})' % SEL,
            "{{instance}} adopted"),
          q('max(adaptd_cluster_shards_without_holder{%s})' % SEL, "without holder")]),
        ("Claims by reason",
         "Shards claimed per second: new (unheld at the start), restart (kept through a "
         "restart), failover (their holder's lease lapsed), move (their holder released them).",
         "short",
         [q('sum by (reason) (rate(adaptd_cluster_claims_total{%s}[%s]))' % (SEL, W),
            "{{reason}}")]),
        ("Releases by reason",
         "Shards released per second: move (to their desired owner), drain (the member "
         "drains), lost (the member's lease lapsed).", "short",
         [q('sum by (reason) (rate(adaptd_cluster_releases_total{%s}[%s]))' % (SEL, W),
            "{{reason}}")]),
        ("Restores in flight",
         "Stores of adopted shards' hot lists queued or loading in the background, per member.",
         "short",
         [q('sum by (instance) (adaptd_cluster_restores_in_flight{%s})' % SEL,
            "{{instance}}")]),
        ("Restore seconds",
         "Percentiles of the time the background restore takes to load one hot store.", "s",
         quantiles("adaptd_cluster_restore_seconds", [], "")),
        ("Lease age",
         "Seconds since etcd last acknowledged a keep-alive of each member's lease (renewed "
         "every third of the TTL), beside the TTL: a member stops serving shortly before its "
         "lease age reaches the TTL, and stops at it.", "s",
         [q('max by (instance) (adaptd_cluster_lease_age_seconds{%s})' % SEL, "{{instance}}"),
          q('max(adaptd_cluster_lease_ttl_seconds{%s})' % SEL, "TTL")]),
        ("Failovers per hour",
         "Shards claimed over the last hour because their holder's lease lapsed (counted by "
         "their new holders), and shards the members lost with their lease (counted by those "
         "that lived to see it). A lost member's shards, about %d / members, fail over at "
         "once; AdaptdClusterRepeatedFailovers fires past two members' worth in an hour."
         % SHARDS, "short",
         [q('sum(increase(adaptd_cluster_claims_total{%s,reason="failover"}[1h]))' % SEL,
            "failed over (claimed)"),
          q('sum(increase(adaptd_cluster_releases_total{%s,reason="lost"}[1h]))' % SEL,
            "lost with a lease (released)")]),
        ("Routing: forwarded against served where they arrived",
         "Calls per second a member passed to their shard's holder, and calls served by the "
         "member they arrived at. A forwarded call is counted in adaptd_requests_total twice, "
         "by the member it arrived at and by the holder, so the second is all calls less "
         "twice the forwarded. Clients routing to holders (docs/CLUSTER_OPERATIONS.md) bring "
         "the forwarded toward zero.", "reqps",
         [q('sum(rate(adaptd_forwarded_calls_total{%s}[%s])) or vector(0)' % (SEL, W),
            "forwarded to the holder"),
          q('sum(rate(adaptd_requests_total{%s}[%s])) - 2 * '
            '(sum(rate(adaptd_forwarded_calls_total{%s}[%s])) or vector(0))' % (SEL, W, SEL, W),
            "served where they arrived")]),
        ("Share of calls forwarded",
         "Forwarded calls as a share of the calls clients sent (all calls less the forwarded "
         "ones' second count). Each is a hop: a forwarded Predict runs at about half the "
         "direct throughput.", "percentunit",
         [q('(sum(rate(adaptd_forwarded_calls_total{%s}[%s])) or vector(0)) / '
            '(sum(rate(adaptd_requests_total{%s}[%s])) - '
            '(sum(rate(adaptd_forwarded_calls_total{%s}[%s])) or vector(0)))'
            % (SEL, W, SEL, W, SEL, W), "forwarded")]),
    ]),
]


def job_variable(name, label, metric):
    """A dashboard variable: the jobs whose targets export `metric`, all by default."""
    definition = "label_values(%s, job)" % metric
    return {"name": name, "label": label, "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": definition, "refId": name},
            "definition": definition,
            "includeAll": True, "multi": True, "allValue": ".*",
            "current": {"text": "All", "value": "$__all"}, "refresh": 2, "hide": 0}


def dashboard():
    panels = []
    next_id = 1
    y = 0
    for title, row_panels in ROWS:
        panels.append({"type": "row", "title": title, "id": next_id, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        next_id += 1
        y += 1
        for i, (ptitle, desc, unit, targets) in enumerate(row_panels):
            panels.append({
                "type": "timeseries",
                "title": ptitle,
                "description": desc,
                "id": next_id,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 8, "x": (i % 3) * 8, "y": y + (i // 3) * 8},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"},
                            "tooltip": {"mode": "multi"}},
                "targets": [dict(t, refId=chr(ord("A") + k),
                                 datasource={"type": "prometheus", "uid": "${datasource}"})
                            for k, t in enumerate(targets)],
            })
            next_id += 1
        y += 8 * ((len(row_panels) + 2) // 3)
    return {
        "uid": "adaptd-overview",
        "title": "adaptd",
        "description": "adaptd: traffic, latency, queueing, adaptation quality, stores, "
                       "the durable log, the cluster on etcd.",
        "tags": ["adaptd"],
        "timezone": "browser",
        "schemaVersion": 38,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-3h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0},
            job_variable("job", "Job", "adaptd_requests_total"),
            # etcd's members (the cluster on etcd's space against the guard).
            job_variable("etcd_job", "etcd job", "etcd_server_quota_backend_bytes"),
        ]},
        "panels": panels,
    }


def render():
    text = json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"
    indented = "".join("    " + line + "\n" if line else "\n" for line in text.splitlines())
    configmap = (
        "---\n"
        "# Generated by deploy/grafana/generate.py: the adaptd dashboard for Grafana's\n"
        "# dashboard sidecar, which loads every ConfigMap labelled grafana_dashboard: \"1\".\n"
        "apiVersion: v1\n"
        "kind: ConfigMap\n"
        "metadata:\n"
        "  name: adaptd-dashboard\n"
        "  labels:\n"
        "    grafana_dashboard: \"1\"\n"
        "    app.kubernetes.io/name: adaptd\n"
        "    app.kubernetes.io/component: dashboard\n"
        "data:\n"
        "  adaptd-dashboard.json: |\n" + indented)
    return text, configmap


def main():
    text, configmap = render()
    if "--check" in sys.argv[1:]:
        stale = [p for p, want in ((JSON_PATH, text), (CONFIGMAP_PATH, configmap))
                 if not os.path.exists(p) or open(p).read() != want]
        for p in stale:
            print("stale: %s (run deploy/grafana/generate.py)" % p)
        return 1 if stale else 0
    with open(JSON_PATH, "w") as f:
        f.write(text)
    with open(CONFIGMAP_PATH, "w") as f:
        f.write(configmap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
