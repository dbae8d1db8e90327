"""The run's tables: summary.csv (a row per song) and report.html (the pruning paper's Table 1
and Table 2 over the dataset, the spread of losses and times as pictures, links to every song)."""

import csv
import html
import io
import math
import os
import random
import statistics

from .song_task import song_results, write_atomically

COLUMNS = ["song", "layout", "tracks", "audio_seconds", "status", "code", "loss_before",
           "left_right_before", "mid_before", "side_before", "loss_after", "left_right_after",
           "mid_after", "side_after",
           "spectral_difference_db_after", "loss_pruned", "left_right_pruned", "mid_pruned",
           "side_pruned", "processors_before", "processors_after", "fit_seconds",
           "prune_seconds", "task_seconds"]
STAGES = [("initial", "before"), ("fitted", "after"), ("pruned", "pruned")]
TERMS = [("loss", "loss"), ("L/R", "left_right"), ("mid", "mid"), ("side", "side")]


def song_row(run_folder, record):
    """A song's row of summary.csv, from its manifest record and its folders' summary.json."""
    fit, pruning = song_results(run_folder, record["song"]) if record["state"] == "done" else (
        None, None)
    row = {"song": record["song"], "layout": record.get("layout", ""),
           "tracks": record.get("tracks", ""), "audio_seconds": record.get("audio_seconds", ""),
           "status": record["state"], "code": record.get("code", ""),
           "task_seconds": record.get("seconds", "")}
    if fit:
        before, after = fit["loss_before"], fit["loss_after"]
        row.update(loss_before=before["loss"], left_right_before=before["left_right"],
                   mid_before=before["mid"], side_before=before["side"], loss_after=after["loss"],
                   left_right_after=after["left_right"], mid_after=after["mid"],
                   side_after=after["side"],
                   spectral_difference_db_after=after["spectral_difference_db"],
                   processors_before=fit["processors"], processors_after=fit["processors"],
                   fit_seconds=round(fit["fit_seconds"], 2))
    if pruning:
        pruned = pruning["loss_pruned"]
        row.update(loss_pruned=pruned["loss"], left_right_pruned=pruned["left_right"],
                   mid_pruned=pruned["mid"], side_pruned=pruned["side"],
                   processors_after=pruning["processors_after"],
                   prune_seconds=round(pruning["prune_seconds"], 2))
    return {column: row.get(column, "") for column in COLUMNS}, pruning


def write_tables(run_folder, records, pruned):
    rows, prunings = zip(*(song_row(run_folder, r) for r in records)) if records else ((), ())
    table = io.StringIO(newline="")
    writer = csv.DictWriter(table, COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(os.path.join(run_folder, "summary.csv"), table.getvalue())
    write_atomically(os.path.join(run_folder, "report.html"),
                     report_html(run_folder, list(rows), [p for p in prunings if p], pruned))


def _numbers(rows, column):
    return [float(r[column]) for r in rows if r[column] not in ("", None)
            and math.isfinite(float(r[column]))]


def _spread(values):
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return (f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"
            f"<br><small>median {statistics.median(values):.4f}</small>")


def table_1(rows, pruned):
    """Mean ± standard deviation (and median) of every loss term, per group of songs."""
    done = [r for r in rows if r["status"] == "done"]
    groups = [("all songs", done)]
    layouts = sorted({r["layout"] for r in done})
    if len(layouts) > 1:
        groups += [(f"{layout} layout", [r for r in done if r["layout"] == layout])
                   for layout in layouts]
    head = "".join(f"<th>{name}</th>" for name, _ in TERMS)
    out = [f"<table><tr><th>songs</th><th>console</th><th>n</th>{head}</tr>"]
    for label, group in groups:
        stages = [s for s in STAGES if pruned or s[1] != "pruned"]
        for i, (stage, suffix) in enumerate(stages):
            cells = []
            for _, term in TERMS:
                column = f"{term}_{suffix}"
                cells.append(f"<td>{_spread(_numbers(group, column)) if column in COLUMNS else '–'}"
                             "</td>")
            first = f"<td rowspan=\"{len(stages)}\">{html.escape(label)}</td>" if i == 0 else ""
            count = len(_numbers(group, f"loss_{suffix}"))
            out.append(f"<tr>{first}<td>{stage}</td><td>{count}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    return "\n".join(out)


def table_2(prunings):
    """Processors per type before and after pruning, summed over the songs, and the share removed
    (ρ)."""
    totals = {}
    for pruning in prunings:
        for type_name, (before, after) in pruning["per_type"].items():
            counts = totals.setdefault(type_name, [0, 0])
            counts[0] += before
            counts[1] += after
    if not totals:
        return "<p>No song was pruned.</p>"
    out = ["<table><tr><th>type</th><th>before</th><th>after</th><th>removed (ρ)</th></tr>"]
    for type_name, (before, after) in sorted(totals.items()):
        out.append(f"<tr><td>{html.escape(type_name)}</td><td>{before}</td><td>{after}</td>"
                   f"<td>{1 - after / before if before else 0:.2f}</td></tr>")
    before = sum(c[0] for c in totals.values())
    after = sum(c[1] for c in totals.values())
    out.append(f"<tr><th>all</th><th>{before}</th><th>{after}</th>"
               f"<th>{1 - after / before if before else 0:.2f}</th></tr></table>")
    return "\n".join(out)


# Pictures: small SVGs written here, so that the page needs nothing but a browser.
WIDTH, HEIGHT, MARGIN = 520, 300, 56  # two side by side on the page


def _axis_ticks(low, high, count=5):
    if high <= low:
        high = low + 1
    step = 10 ** math.floor(math.log10((high - low) / count))
    for multiple in (1, 2, 5, 10):
        if (high - low) / (step * multiple) <= count:
            step *= multiple
            break
    first = math.floor(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 2)]


def _frame(title, x_label, y_label, y_ticks, y_of):
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'font-family="sans-serif" font-size="12"><title>{html.escape(title)}</title>',
             f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="14">'
             f'{html.escape(title)}</text>',
             f'<text x="{WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
             f'{html.escape(x_label)}</text>',
             f'<text transform="translate(14 {HEIGHT / 2}) rotate(-90)" text-anchor="middle">'
             f'{html.escape(y_label)}</text>']
    for tick in y_ticks:
        y = y_of(tick)
        parts.append(f'<line x1="{MARGIN}" x2="{WIDTH - 10}" y1="{y:.1f}" y2="{y:.1f}" '
                     'stroke="#ddd"/>'
                     f'<text x="{MARGIN - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    return parts


def loss_picture(rows, pruned):
    """Every song's loss per console (initial, fitted, pruned) as dots, with the median."""
    stages = [s for s in STAGES if pruned or s[1] != "pruned"]
    values = {stage: _numbers(rows, f"loss_{suffix}") for stage, suffix in stages}
    every = [v for vs in values.values() for v in vs]
    if not every:
        return ""
    ticks = _axis_ticks(0, max(every))  # the last one is above every value

    def y_of(value):
        return HEIGHT - MARGIN - (HEIGHT - MARGIN - 30) * value / ticks[-1]
    parts = _frame("Whole-song loss per song", "console", "loss", ticks, y_of)
    column = (WIDTH - MARGIN - 10) / len(stages)
    jitter = random.Random(0)
    colours = ["#888", "#1f77b4", "#2ca02c"]
    for i, (stage, _) in enumerate(stages):
        centre = MARGIN + column * (i + 0.5)
        parts.append(f'<text x="{centre:.1f}" y="{HEIGHT - MARGIN + 16}" '
                     f'text-anchor="middle">{stage}</text>')
        for value in values[stage]:
            x = centre + jitter.uniform(-column / 5, column / 5)
            parts.append(f'<circle cx="{x:.1f}" cy="{y_of(value):.1f}" r="3" '
                         f'fill="{colours[i]}" fill-opacity="0.6"/>')
        if values[stage]:
            y = y_of(statistics.median(values[stage]))
            parts.append(f'<line x1="{centre - column / 3:.1f}" x2="{centre + column / 3:.1f}" '
                         f'y1="{y:.1f}" y2="{y:.1f}" stroke="black" stroke-width="2"/>')
    parts.append("</svg>")
    return "\n".join(parts)


def time_picture(rows):
    """A histogram of the time each song's task took."""
    times = [t / 60 for t in _numbers(rows, "task_seconds")]
    if not times:
        return ""
    bins = max(1, min(20, len(times)))
    low, high = min(times), max(times)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for t in times:
        counts[min(bins - 1, int((t - low) / width))] += 1
    ticks = _axis_ticks(0, max(counts))

    def y_of(count):
        return HEIGHT - MARGIN - (HEIGHT - MARGIN - 30) * count / ticks[-1]
    parts = _frame("Time per song", "minutes", "songs", ticks, y_of)
    bar = (WIDTH - MARGIN - 10) / bins
    for i, count in enumerate(counts):
        x = MARGIN + i * bar
        parts.append(f'<rect x="{x + 1:.1f}" y="{y_of(count):.1f}" width="{bar - 2:.1f}" '
                     f'height="{y_of(0) - y_of(count):.1f}" fill="#1f77b4"/>')
    for i in range(0, bins + 1, max(1, bins // 5)):
        parts.append(f'<text x="{MARGIN + i * bar:.1f}" y="{HEIGHT - MARGIN + 16}" '
                     f'text-anchor="middle">{low + i * width:.2f}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def report_html(run_folder, rows, prunings, pruned):
    done = [r for r in rows if r["status"] == "done"]
    failed = [r for r in rows if r["status"] == "failed"]
    title = f"grafx dataset run: {os.path.basename(run_folder)}"
    links = []
    for r in rows:
        name = html.escape(r["song"])
        base = f"songs/{name}"
        cells = [f"<td>{name}</td><td>{html.escape(str(r['layout']))}</td>"
                 f"<td>{r['tracks']}</td><td>{r['status']}"
                 + (f" <code>{html.escape(r['code'])}</code>" if r["code"] else "") + "</td>"]
        for column in ("loss_before", "loss_after", "loss_pruned"):
            value = r[column]
            cells.append(f"<td>{float(value):.4f}</td>" if value != "" else "<td>–</td>")
        cells.append(f"<td>{r['processors_before']} → {r['processors_after']}</td>"
                     if r["processors_before"] != "" else "<td>–</td>")
        cells.append(f"<td>{float(r['task_seconds']):.0f} s</td>" if r["task_seconds"] != ""
                     else "<td>–</td>")
        report = (f'<a href="{base}/report.html">fit</a>' if r["status"] == "done" else
                  f'<a href="{base}/log.txt">log</a>' if os.path.exists(
                      os.path.join(run_folder, base, "log.txt")) else "")
        if r["loss_pruned"] != "":
            report += f' · <a href="{base}/pruned/report.html">pruning</a>'
        links.append(f"<tr>{''.join(cells)}<td>{report}</td></tr>")
    failures = "".join(
        f"<li>{html.escape(r['song'])}: <code>{html.escape(r['code'])}</code></li>"
        for r in failed)
    total_time = sum(_numbers(rows, "task_seconds"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; vertical-align: top; }}
td:first-child, th:first-child {{ text-align: left; }}
small {{ color: #666; }}
.pictures {{ display: flex; flex-wrap: wrap; gap: 1em; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p>{len(done)} of {len(rows)} songs done, {len(failed)} failed; {total_time / 3600:.2f} h of work
(<a href="summary.csv">summary.csv</a>, <a href="manifest.jsonl">manifest.jsonl</a>).</p>
{f"<p>Failed (codes in the manifest and docs/errors.md):</p><ul>{failures}</ul>" if failures else ""}
<h2>Whole-song losses (Table 1)</h2>
<p>The pruning paper's mix loss (0 is a perfect match) and its left/right, mid and side parts:
mean ± standard deviation over the songs, median below.</p>
{table_1(rows, pruned)}
<h2>Processors removed by pruning, per type (Table 2)</h2>
{table_2(prunings) if pruned else "<p>This run did not prune (run it with --prune).</p>"}
<h2>Distributions</h2>
<div class="pictures">{loss_picture(rows, pruned)}{time_picture(rows)}</div>
<h2>Songs</h2>
<table><tr><th>song</th><th>layout</th><th>tracks</th><th>status</th><th>initial</th>
<th>fitted</th><th>pruned</th><th>processors</th><th>time</th><th>reports</th></tr>
{chr(10).join(links)}
</table>
</body></html>
"""
