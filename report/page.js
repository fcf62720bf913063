/* page.js - draws the report page from the JSON blob #allocrr-data.
 * Time series with dygraphs (zoom: drag; pan: shift-drag; reset: double
 * click), bars with Chart.js, flame graphs of the call sites on a canvas of
 * its own (click: zoom; hover: the frame). Every section tolerates missing keys: a
 * report with fewer analyses simply shows fewer cards. */
(function () {
	"use strict";
	var data = JSON.parse(document.getElementById("allocrr-data").textContent);
	var app = document.getElementById("app");
	var toc = document.getElementById("toc");
	var charts = 0;
	/* green is live bytes' and grey the ideal line's: the allocators get them last */
	var PALETTE = ["#2f6fdb", "#e8710a", "#7b3fc4", "#c62828", "#0097a7", "#8d6e63", "#d81b60", "#9e9d24",
		"#1a7f37", "#5d6677"];

	Chart.defaults.animation = false;
	Chart.defaults.font.size = 12;
	Chart.defaults.color = "#5d6677";

	function get(o, path) {
		var parts = path.split(".");
		for (var i = 0; i < parts.length; i++) {
			if (o === null || o === undefined) return undefined;
			o = o[parts[i]];
		}
		return o;
	}
	function isNum(v) { return typeof v === "number" && isFinite(v); }
	function bytes(b) {
		if (!isNum(b)) return "–";
		var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = Math.abs(b);
		while (v >= 1024 && i < 4) { v /= 1024; i++; }
		var s = (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)) + " " + u[i];
		return (b < 0 ? "-" : "") + s;
	}
	/* waste that falls below 0 (live bytes not resident: touch none, or pages resident
	 * before the baseline) is no gain: "–", the figure in its title */
	function waste(b) {
		if (isNum(b) && b < 0) return { v: "–", title: bytes(b) + ": below 0, live bytes not resident" };
		return bytes(b);
	}
	function wastePct(r) {
		if (isNum(r) && r < 0) return { v: "–", title: pct(r) + ": below 0, live bytes not resident" };
		return pct(r);
	}
	function count(n) {
		if (!isNum(n)) return "–";
		return Math.round(n).toLocaleString("en-US");
	}
	function ns(t) {
		if (!isNum(t)) return "–";
		var a = Math.abs(t);
		if (a < 1e3) return t.toFixed(0) + " ns";
		if (a < 1e6) return (t / 1e3).toFixed(a < 1e4 ? 2 : 1) + " µs";
		if (a < 1e9) return (t / 1e6).toFixed(a < 1e7 ? 2 : 1) + " ms";
		return (t / 1e9).toFixed(3) + " s";
	}
	function ratio(r) { return isNum(r) ? r.toFixed(3) : "–"; }
	function pct(r) { return isNum(r) ? (100 * r).toFixed(1) + " %" : "–"; }
	function el(tag, cls, text) {
		var e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = text;
		return e;
	}
	function card(parent, title, wide) {
		var c = el("div", "card" + (wide ? " wide" : ""));
		c.appendChild(el("h3", null, title));
		parent.appendChild(c);
		return c;
	}
	function note(parent, text) { parent.appendChild(el("p", "note", text)); }
	/* rows: arrays of cells (strings or {v, cls}); first column left-aligned */
	function table(parent, head, rows) {
		var wrap = el("div", "scroll"), t = el("table"), tr = el("tr");
		/* a column of left-aligned cells (names, paths) has its heading left-aligned too */
		head.forEach(function (h, i) {
			var c0 = rows.length ? rows[0][i] : null;
			tr.appendChild(el("th", c0 && c0.cls && /(^| )l( |$)/.test(c0.cls) ? "l" : null, h));
		});
		var thead = el("thead");
		thead.appendChild(tr);
		t.appendChild(thead);
		var tb = el("tbody");
		rows.forEach(function (r) {
			var row = el("tr");
			r.forEach(function (c) {
				var td = el("td", c && c.cls ? c.cls : null, c && c.v !== undefined ? c.v : c);
				if (c && c.path) breakable(td, String(c.v), c.path);
				if (c && c.title) td.title = c.title;
				if (c && c.click) {
					td.classList.add("link");
					td.addEventListener("click", c.click);
				}
				row.appendChild(td);
			});
			tb.appendChild(row);
		});
		t.appendChild(tb);
		wrap.appendChild(t);
		parent.appendChild(wrap);
		return t;
	}
	/* A path, expression or C++ name that may wrap only between its parts: a break
	 * opportunity (<wbr>) after each of its separators (besides spaces and hyphens), so
	 * "/tmp/run-12/trace.atr" never breaks inside "trace" (CSS's overflow-wrap would,
	 * anywhere). kind: PATH (after "/"), EXPR (a check: also after ".", "_", ",", "=",
	 * "(" - metric paths are long words), else a C++ name ("/", ",", "=", ":", "("). */
	var PATH = 2, EXPR = 3;
	function breakable(td, text, kind) {
		var at = kind === PATH ? /(?<=\/)/ : kind === EXPR ? /(?<=[\/,=.(_])/ : /(?<=[\/,=:(])/;
		td.textContent = "";
		text.split(at).forEach(function (part, i) {
			if (i) td.appendChild(el("wbr"));
			td.appendChild(document.createTextNode(part));
		});
	}
	function tiles(parent, list) {
		var box = el("div", "tiles");
		list.forEach(function (x) {
			if (x[1] === "–") return;
			var t = el("div", "tile");
			t.appendChild(el("div", "v", x[1]));
			t.appendChild(el("div", "k", x[0]));
			if (x[2]) t.title = x[2];
			box.appendChild(t);
		});
		parent.appendChild(box);
	}
	function chartBox(parent, small) {
		var d = el("div", "chart" + (small ? " small" : ""));
		d.setAttribute("data-chart", "1");
		parent.appendChild(d);
		charts++;
		return d;
	}

	/* A dygraph of several series that each have their own x column: merged
	 * on x, gaps bridged (connectSeparatedPoints). xs in the unit shown. */
	function timeSeries(parent, title, xlabel, series, opts) {
		var byX = new Map();
		series.forEach(function (s, si) {
			for (var i = 0; i < s.x.length; i++) {
				var x = s.x[i], y = s.y[i];
				if (!isNum(x) || !isNum(y)) continue;
				var row = byX.get(x);
				if (!row) { row = new Array(series.length + 1).fill(null); row[0] = x; byX.set(x, row); }
				row[si + 1] = y;
			}
		});
		var rows = Array.from(byX.values()).sort(function (a, b) { return a[0] - b[0]; });
		if (rows.length < 2) return null;
		/* Each series' last value at or before every row: hovering a row that
		 * only another series sampled still shows them all (what was live
		 * when RSS was sampled), not one value alone. A series with a
		 * `before` value has it before its first sample: live bytes are 0
		 * before the first allocation, however late the program made it. */
		var last = series.map(function (s, si) {
			var v = isNum(s.before) ? s.before : null;
			return rows.map(function (r) { if (r[si + 1] !== null) v = r[si + 1]; return v; });
		});
		function rowAt(x) {
			var lo = 0, hi = rows.length - 1;
			while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (rows[mid][0] <= x) lo = mid; else hi = mid - 1; }
			return lo;
		}
		function legend(d) {
			if (d.x === null || d.x === undefined)
				return d.series.map(function (s) {
					return "<span style=\"color:" + s.color + "\">" + s.dashHTML + " <b>" + s.labelHTML + "</b></span>";
				}).join(" ");
			var r = rowAt(d.x);
			return d.xHTML + ": " + d.series.map(function (s, si) {
				var v = s.y !== null && s.y !== undefined ? s.y : last[si][r];
				if (!s.isVisible) return "";
				/* before a series' first sample (a recorder's first RSS sample
				 * comes when its thread first runs): named, without a value */
				return "<span style=\"color:" + s.color + "\"><b>" + s.labelHTML + "</b>: " +
					(v === null || v === undefined ? "–" : bytes(v)) + "</span>";
			}).join(" ");
		}
		/* the legend above the plot, never over the curves */
		var leg = el("div", "legend");
		parent.appendChild(leg);
		var box = chartBox(parent);
		var o = {
			labels: [xlabel].concat(series.map(function (s) { return s.name; })),
			colors: series.map(function (s, i) { return s.color || PALETTE[i % PALETTE.length]; }),
			connectSeparatedPoints: true,
			strokeWidth: 1.5,
			xlabel: xlabel,
			ylabel: "bytes",
			labelsKMG2: true,
			legend: "always",
			labelsDiv: leg,
			labelsSeparateLines: false,
			legendFormatter: legend,
			highlightCircleSize: 3,
			gridLineColor: "#e6e9ef",
			axisLabelWidth: 70,
			series: {},
			axes: {
				y: { valueFormatter: bytes, axisLabelFormatter: function (v) { return bytes(v); } },
				x: { labelsKMG2: false, valueFormatter: function (v) { return opts && opts.xfmt ? opts.xfmt(v) : String(v); },
					axisLabelFormatter: function (v) { return opts && opts.xaxis ? opts.xaxis(v) : String(v); } }
			},
			title: title
		};
		series.forEach(function (s) {
			if (s.dash) o.series[s.name] = { strokePattern: Dygraph.DASHED_LINE };
			if (s.fill) o.series[s.name] = Object.assign(o.series[s.name] || {}, { fillGraph: true, fillAlpha: 0.12 });
			if (s.point) o.series[s.name] = Object.assign(o.series[s.name] || {}, { drawPoints: true, pointSize: 4 });
		});
		new Dygraph(box, rows, o);
		note(parent, "Drag to zoom, shift-drag to pan, double-click to reset. Hover for values.");
		return box;
	}

	/* Byte axes step in round binary units (0.5 MiB, 256 KiB), not 0.48 MiB. */
	function byteStep(datasets) {
		var max = 0;
		datasets.forEach(function (d) { max = Math.max(max, maxOf(d.data)); });
		if (!max) return undefined;
		var u = 1;
		while (max / u >= 1024) u *= 1024;
		var raw = max / u / 6, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
		return u * p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10);
	}

	function bars(parent, labels, datasets, yfmt, opts) {
		var box = chartBox(parent, opts && opts.small);
		var canvas = el("canvas");
		box.appendChild(canvas);
		new Chart(canvas, {
			type: "bar",
			data: { labels: labels, datasets: datasets.map(function (d, i) {
				return Object.assign({ backgroundColor: PALETTE[i % PALETTE.length], borderWidth: 0 }, d);
			}) },
			options: {
				responsive: true, maintainAspectRatio: false,
				plugins: {
					legend: { display: datasets.length > 1, position: "bottom" },
					tooltip: { callbacks: { label: function (c) {
						return c.dataset.label + ": " + yfmt(c.parsed.y);
					} } }
				},
				scales: {
					x: { title: { display: !!(opts && opts.xtitle), text: opts && opts.xtitle },
						grid: { display: false } },
					/* log: a decade below the smallest count, so a bucket of 11 is a bar, not the axis (Chart.js
					 * put the axis at 10) */
					y: { type: opts && opts.log ? "logarithmic" : "linear", beginAtZero: !(opts && opts.log),
						min: opts && opts.log && opts.logMin ? opts.logMin : undefined,
						title: { display: !!(opts && opts.ytitle), text: opts && opts.ytitle },
						ticks: { stepSize: yfmt === bytes && !(opts && opts.log) ? byteStep(datasets) : undefined,
							callback: function (v) {
							if (opts && opts.log && (Math.log10(v) % 1 !== 0 || v < 1)) return "";
							return yfmt(v);
						} } }
				}
			}
		});
		return box;
	}

	/* ns on an axis: the unit that suits the span */
	function timeScale(maxNs) {
		var u = maxNs < 2e6 ? ["µs", 1e3] : maxNs < 2e9 ? ["ms", 1e6] : ["s", 1e9];
		return { unit: u[0], div: u[1], label: "time (" + u[0] + ")",
			fmt: function (v) { return (+v.toPrecision(6)) + " " + u[0]; },
			axis: function (v) { return String(+v.toPrecision(4)); } };
	}
	function maxOf(arr) {
		var m = 0;
		for (var i = 0; arr && i < arr.length; i++) if (isNum(arr[i]) && arr[i] > m) m = arr[i];
		return m;
	}

	function allocName(a, i) { return a.allocator || ("allocator " + (i + 1)); }

	function checksSection(parent) {
		var list = data.checks || [];
		if (!list.length) return;
		var sec = el("section");
		sec.id = "checks";
		parent.appendChild(sec);
		var broken = list.filter(function (c) { return !c.ok; }).length;
		sec.appendChild(el("h2", null, "Checks — " + (broken ? broken + " broken of " + list.length
			: "all " + list.length + " passed")));
		toc.appendChild(Object.assign(el("a", null, "Checks"), { href: "#checks" }));
		var c = card(sec, "Thresholds from the configuration", true);
		table(c, ["check", "trace", "allocator", "value", "limit", "result"], list.map(function (k) {
			return [{ v: k.check, cls: "l wrap", path: EXPR }, { v: k.trace || "", cls: "l wrap", path: PATH },
				{ v: k.allocator || "–", cls: "l" },
				k.error ? { v: k.error, cls: "l badv" } : { v: fmtAuto(k.check, k.value), cls: "brk" },
				{ v: fmtAuto(k.check, k.limit), cls: "brk" },
				{ v: k.ok ? "pass" : "broken", cls: k.ok ? "good" : "badv" }];
		}));
	}
	function fmtAuto(check, v) {
		if (!isNum(v)) return "–";
		if (/rss|bytes|live|ideal|size/.test(check) && Math.abs(v) >= 1024) return bytes(v) + " (" + count(v) + ")";
		if (/_ns\b|latency|wall|cpu/.test(check)) return ns(v);
		return Number.isInteger(v) ? count(v) : v.toPrecision(4);
	}

	function overview(parent, t) {
		var s = t.summary || {}, live = t.live || {}, leaks = t.leaks || {}, rss = get(t, "rss.recorded") || {};
		tiles(parent, [
			["calls", count(s.calls)],
			["failed calls", count(s.failed)],
			["bytes requested", bytes(s.bytes_requested)],
			["calls per second", count(s.calls_per_s)],
			["threads", count(s.threads)],
			["duration", ns(s.duration_ns || get(t, "trace.duration_ns"))],
			["peak live bytes", bytes(live.peak_bytes), "most requested bytes live at once"],
			["peak live blocks", count(live.peak_blocks)],
			["leaked bytes", bytes(leaks.bytes), "live at the end of the trace"],
			["leaked blocks", count(leaks.blocks)],
			["recorded peak RSS", bytes(rss.peak), "the largest RSS sample"],
			["true peak RSS", isNum(rss.true_peak) ? bytes(rss.true_peak) : "–",
				"the kernel's high-water mark at exit: a spike between two samples reaches it"],
			/* a rate over less than a second extrapolates (873 MiB/s from two samples 76 µs
			 * apart): the change and the time instead, as the terminal says it */
			isNum(rss.growth_bytes_per_s) && isNum(rss.span_ns) && rss.span_ns < 1e9 ?
				["RSS change in " + (+(rss.span_ns / timeScale(rss.span_ns).div).toPrecision(3)) + " " +
					timeScale(rss.span_ns).unit,
					(rss.final < rss.first ? "−" : "+") + bytes(Math.abs(rss.final - rss.first))] :
				["RSS growth", isNum(rss.growth_bytes_per_s) ? bytes(rss.growth_bytes_per_s) + "/s" :
					rss.samples === 1 ? "one sample" : "–"]
		]);
	}

	function memoryOverTime(grid, t) {
		var live = get(t, "live.timeline"), rec = get(t, "rss.recorded.timeline");
		var series = [];
		var ts = timeScale(Math.max(maxOf(live && live.t), maxOf(rec && rec.t)));
		function x(arr) { return arr.map(function (v) { return v / ts.div; }); }
		if (live && live.t) {
			series.push({ name: "live bytes (max)", x: x(live.t), y: live.bytes_max || live.bytes || [], fill: true,
				color: "#1a7f37", before: 0 });
			if (live.bytes_min)
				series.push({ name: "live bytes (min)", x: x(live.t), y: live.bytes_min, color: "#8bc34a", dash: true, before: 0 });
		}
		var one = rec && rec.t && rec.rss && rec.t.length === 1;
		if (rec && rec.t && rec.rss && rec.t.length)
			/* one sample is no line: drawn as a point, and said under the chart */
			series.push({ name: "recorded RSS", x: x(rec.t), y: rec.rss, color: "#2f6fdb", point: one });
		if (!series.length) return;
		var c = card(grid, "Recorded run: RSS against live bytes", true);
		var drawn = timeSeries(c, null, ts.label, series, { xfmt: ts.fmt, xaxis: ts.axis });
		if (one) {
			var p = el("p", drawn ? "note rss-one" : "empty rss-one", "One RSS sample: " + bytes(rec.rss[0]) + " at " +
				(+(rec.t[0] / ts.div).toPrecision(3)) + " " + ts.unit + " (the recorder samples RSS every 10 ms by default, and this run was " +
				"shorter), so there is no RSS curve to draw: the point is that sample.");
			c.appendChild(p);
		} else if (!drawn) {
			c.appendChild(el("p", "empty", "too few points to draw"));
		}
		var tp = get(t, "rss.recorded.true_peak"), sp = get(t, "rss.recorded.peak");
		if (isNum(tp) && isNum(sp) && tp > sp)
			note(c, "True peak RSS (the kernel's high-water mark at exit): " + bytes(tp) + ", " + bytes(tp - sp) +
				" above the highest sample: a spike between two samples, which the curve does not show.");
		var un = get(t, "rss.recorded.unexplained_peak");
		var ug = get(t, "rss.recorded.unexplained_growth_peak"), base = get(t, "rss.recorded.baseline");
		if (isNum(un)) note(c, "RSS the heap does not explain at its peak: " + (un < 0 ? "– (live bytes above RSS: " +
			"allocated, not all touched)" : bytes(un)) + (un >= 0 && isNum(ug) && isNum(base) ? ", " +
			(ug > 0 ? bytes(ug) : "none") + " of it above the first sample's " + bytes(Math.max(base, 0)) +
			" (code, libraries, stacks: what the process held before its heap counted)" : "") + ".");
		if (!rec || !rec.t || !rec.t.length)
			note(c, "The trace holds no RSS samples (recorded without the RSS sampler, or too short for one).");
	}

	function replayOverTime(grid, t, als) {
		var series = [], ideal = null, withOps = als.every(function (a) {
			var tl = get(a, "rss.timeline");
			return tl && tl.op_index && tl.op_index.length;
		});
		var rts = timeScale(Math.max.apply(null, [0].concat(als.map(function (a) { return maxOf(get(a, "rss.timeline.t")); }))));
		als.forEach(function (a, i) {
			var tl = get(a, "rss.timeline");
			if (!tl || !tl.rss) return;
			var x = withOps ? tl.op_index : (tl.t || []).map(function (v) { return v / rts.div; });
			series.push({ name: allocName(a, i) + " RSS", x: x, y: tl.rss, color: PALETTE[i % PALETTE.length] });
			if (i === 0 && tl.live)
				series.push({ name: "live bytes", x: x, y: tl.live, color: "#1a7f37", fill: true, before: 0 });
			var id = get(a, "fragmentation.ideal_rss");
			if (isNum(id) && get(a, "fragmentation.touch") !== "none") ideal = id;
		});
		if (!series.length) return;
		if (ideal !== null) {
			var xs = [];
			series.forEach(function (s) { xs = xs.concat(s.x.filter(isNum)); });
			var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
			series.push({ name: "ideal RSS (peak live)", x: [lo, hi], y: [ideal, ideal], color: "#5d6677", dash: true });
		}
		var c = card(grid, "Replays: RSS per allocator against live bytes and ideal RSS", true);
		timeSeries(c, null, withOps ? "calls replayed" : rts.label, series,
			withOps ? { xfmt: function (v) { return count(v) + " calls"; }, xaxis: function (v) { return count(v); } }
				: { xfmt: rts.fmt, xaxis: rts.axis });
		note(c, withOps ? "Every allocator replays the same calls, so the x axis is the call index: the curves line up."
			: "x: time since each replay's start.");
		if (ideal === null && als.some(function (a) { return get(a, "fragmentation.touch") === "none"; }))
			note(c, "No ideal RSS line: the replays wrote no block (touch none), so their RSS is not to be read " +
				"against live bytes.");
	}

	/* Why peak / ideal is "–" (null in the document): the replay wrote no block (touch none), or the
	 * trace is too small (under 16 pages live) for RSS to weigh it. The same words as the terminal's. */
	function idealNotes(als) {
		var untouched = [], small = [], out = [];
		als.forEach(function (a, i) {
			var f = a.fragmentation;
			if (!f || f.peak_over_ideal !== null || !isNum(f.ideal_rss) || f.ideal_rss <= 0) return;
			if (f.touch === "none") untouched.push(allocName(a, i));
			else if (f.ideal_rss < 16 * 4096 || (isNum(f.peak_rss) && f.peak_rss < 4096)) small.push(allocName(a, i));
		});
		var ideal = bytes(get(als[0], "fragmentation.ideal_rss"));
		if (untouched.length)
			out.push("No peak/ideal: " + untouched.join(", ") + " replayed with touch none (blocks left unwritten, " +
				"as the program left most of its " + ideal + " peak live): their RSS is the allocator's own pages.");
		if (small.length)
			out.push("No peak/ideal: " + small.join(", ") + ": too small a trace (" + ideal + " live at its peak) " +
				"for RSS, counted in pages above the replay engine's own, to weigh it (it may fit in pages already " +
				"resident).");
		return out;
	}

	function fragmentation(grid, als) {
		var rows = als.filter(function (a) { return a.fragmentation; });
		if (!rows.length) return;
		var c = card(grid, "Fragmentation at the key moments", true); /* eight columns: the full width */
		var labels = rows.map(allocName);
		var ds = [
			{ label: "peak RSS", data: rows.map(function (a) { return get(a, "fragmentation.peak_rss"); }) },
			{ label: "final RSS", data: rows.map(function (a) { return get(a, "fragmentation.final_rss"); }) },
			{ label: "ideal RSS (peak live)", data: rows.map(function (a) {
				var f = a.fragmentation; return isNum(f.ideal_rss) ? f.ideal_rss : f.peak_live; }) }
		];
		bars(c, labels, ds, bytes, { ytitle: "bytes" });
		table(c, ["allocator", "peak RSS", "peak live", "peak/ideal", "internal", "external", "final RSS",
			"final live"], rows.map(function (a, i) {
			var f = a.fragmentation;
			return [allocName(a, i), bytes(f.peak_rss), bytes(f.peak_live), ratio(f.peak_over_ideal),
				waste(f.internal_bytes), waste(f.external_bytes), bytes(f.final_rss), bytes(f.final_live)];
		}));
		idealNotes(rows).forEach(function (s) { note(c, s); });
		var jw = rows.filter(function (a) { return a.fragmentation.jw; });
		if (jw.length) {
			table(c, ["Johnstone & Wilson", "avg over time", "at peak live", "at peak RSS", "peak vs peak"],
				jw.map(function (a, i) {
					var j = a.fragmentation.jw;
					return [allocName(a, i), wastePct(j.avg_over_time), wastePct(j.at_peak_live),
						wastePct(j.at_peak_rss), wastePct(j.peak_vs_peak)];
				}));
			note(c, "(allocator memory − live) / live; internal = usable − requested, external = RSS − usable.");
		}
		var moments = ["peak_live", "peak_rss", "end"];
		var atRows = [];
		rows.forEach(function (a, i) {
			moments.forEach(function (m) {
				var o = get(a, "fragmentation.at." + m);
				if (!o) return;
				atRows.push([allocName(a, i) + " @ " + m.replace("_", " "), bytes(o.rss), bytes(o.live),
					bytes(o.usable), waste(isNum(o.internal) ? o.internal : o.internal_bytes),
					waste(isNum(o.external) ? o.external : o.external_bytes),
					isNum(o.op_index) ? count(o.op_index) : "–"]);
			});
		});
		if (atRows.length)
			table(c, ["moment", "RSS", "live", "usable", "internal", "external", "at call"], atRows);
	}

	function histogram(grid, title, arr, xfmt, what) {
		if (!Array.isArray(arr) || !arr.length) return;
		var c = card(grid, title);
		var labels = arr.map(function (b) { return xfmt(b.lo) + "–" + xfmt(b.hi); });
		var ds = [{ label: "count", data: arr.map(function (b) { return b.count; }) }];
		var counts = arr.map(function (b) { return b.count; }).filter(function (v) { return v > 0; });
		var log = counts.length && Math.max.apply(null, counts) / Math.min.apply(null, counts) >= 100;
		var logMin = log ? Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, counts)))) / 10 : undefined;
		bars(c, labels, ds, count, { log: log, logMin: logMin, ytitle: log ? "count (log scale)" : "count", xtitle: what,
			small: true });
		if (arr[0].bytes !== undefined)
			note(c, "Bytes by bucket: " + arr.filter(function (b) { return b.bytes; }).slice(0, 8)
				.map(function (b) { return xfmt(b.lo) + "–" + xfmt(b.hi) + " " + bytes(b.bytes); }).join(", ") +
				(arr.length > 8 ? ", …" : ""));
		return c;
	}

	function sizes(grid, t) {
		var c = histogram(grid, "Requested sizes", get(t, "sizes.log2"), function (v) { return bytes(v).replace(" ", ""); },
			"request size");
		var top = get(t, "sizes.top");
		if (c && Array.isArray(top) && top.length)
			table(c, ["most frequent size", "calls"], top.slice(0, 10).map(function (s) {
				return [bytes(s.size) + (s.size >= 1024 ? " (" + count(s.size) + ")" : ""), count(s.count)];
			}));
	}

	function lifetimes(grid, t) {
		var c = histogram(grid, "Lifetimes", get(t, "lifetimes.time_log2"), function (v) { return ns(v).replace(" ", ""); },
			"time from allocation to free");
		/* the [0, 1) ns bucket: freed under the same stamp as allocated. A one-thread recording
		 * stamps every 16th call (docs/recorder.md), so these are "shorter than the stamps can
		 * tell", not 0 ns */
		var lt = get(t, "lifetimes.time_log2"), zero = Array.isArray(lt) && lt.length && lt[0].lo === 0 ? lt[0] : null;
		if (c && zero && zero.count)
			note(c, "0ns–1ns: " + count(zero.count) + " blocks freed under the same timestamp as their allocation: " +
				"shorter than the trace's stamps can tell (a one-thread recording reads the clock every 16th call, " +
				"a microsecond or two), not 0 ns.");
		var tmp = get(t, "lifetimes.temporary");
		if (c && tmp)
			note(c, "Temporary allocations (freed before the thread's next allocation): " + count(tmp.count) +
				" (" + pct(tmp.fraction) + "), " + bytes(tmp.bytes) + ".");
	}

	function zeroing(grid, t, als) {
		var z = t.zeroing, rows = als.filter(function (a) { return a.zeroing; });
		if (!z && !rows.length) return;
		var c = card(grid, "Zeroing: what calloc costs and saves");
		var req = get(t, "summary.bytes_requested");
		if (z && z.calloc_calls === 0)
			note(c, "calloc: none called.");
		else if (z)
			table(c, ["trace side", "calls", "bytes"], [
				["calloc", count(z.calloc_calls), bytes(z.calloc_bytes)],
				["  fresh memory", count(z.fresh_calls), bytes(z.fresh_bytes)],
				["  reused memory", count(z.reused_calls), bytes(z.reused_bytes)],
				["  above the mmap threshold", count(z.mmap_calls), bytes(z.mmap_bytes)]
			]);
		if (rows.length) {
			var r = [];
			rows.forEach(function (a, i) {
				var q = a.zeroing;
				[["as recorded", "as_recorded"], ["calloc → malloc", "calloc_as_malloc"],
					["calloc → malloc + memset", "calloc_as_malloc_memset"]].forEach(function (w, j) {
					r.push([j ? { v: "", cls: "l" } : allocName(a, i), { v: w[0], cls: "l" }, ns(q[w[1] + "_ns"]),
						count(q[w[1] + "_minor_faults"]), bytes(q[w[1] + "_peak_rss"])]);
				});
			});
			table(c, ["allocator", "replayed", "time", "minor faults", "peak RSS"], r);
			note(c, "Each trace replayed three ways; the differences are what zeroing costs and what calloc saves.");
			/* a few calloc bytes leave the three ways apart by their noise alone */
			if (z && isNum(req) && req > 0 && z.calloc_bytes < req / 100)
				note(c, "calloc is " + (+(100 * z.calloc_bytes / req).toPrecision(2)) + "% of the bytes requested: " +
					"the three ways differ by noise, not by zeroing.");
		}
	}

	function latency(grid, als) {
		var rows = [], p99 = {}, ops = [];
		als.forEach(function (a, i) {
			var l = a.latency || {};
			Object.keys(l).forEach(function (op) {
				var v = l[op];
				if (!v || !isNum(v.count) || !v.count) return;
				var res = v.resolution_ns;
				function cell(p) {
					if (!isNum(p)) return "–";
					if (isNum(res) && res > 0 && p < res) return { v: "< " + ns(res), title: "below the timer's resolution" };
					return ns(p);
				}
				rows.push([allocName(a, i), { v: op, cls: "l" }, count(v.count), cell(v.p50), cell(v.p90), cell(v.p99),
					cell(v.p999), cell(v.max)]);
				if (ops.indexOf(op) < 0) ops.push(op);
				(p99[op] = p99[op] || [])[i] = v.p99;
			});
		});
		if (!rows.length) return;
		var c = card(grid, "Latency per call");
		bars(c, ops, als.map(function (a, i) {
			return { label: allocName(a, i) + " p99", data: ops.map(function (op) { return (p99[op] || [])[i]; }) };
		}), ns, { ytitle: "p99", small: true });
		table(c, ["allocator", "call", "timed", "p50", "p90", "p99", "p99.9", "max"], rows);
	}

	function times(grid, als) {
		var rows = als.filter(function (a) { return a.time; });
		if (!rows.length) return;
		var c = card(grid, "Replay time");
		bars(c, rows.map(allocName), [{ label: "wall time (median)", data: rows.map(function (a) { return a.time.wall_ns; }) },
			{ label: "cpu time", data: rows.map(function (a) { return a.time.cpu_ns; }) }], ns,
			{ ytitle: "time", small: true });
		table(c, ["allocator", "runs", "wall (median)", "min", "max", "cpu", "minor faults"], rows.map(function (a, i) {
			var tm = a.time;
			return [allocName(a, i), count(a.runs), ns(tm.wall_ns), ns(tm.wall_ns_min), ns(tm.wall_ns_max), ns(tm.cpu_ns),
				count(tm.minor_faults)];
		}));
	}

	function leaksCard(grid, t) {
		var l = t.leaks;
		if (!l) return;
		var c = card(grid, "Leaks: blocks live at the end");
		tiles(c, [["leaked bytes", bytes(l.bytes)], ["leaked blocks", count(l.blocks)],
			["lost by failed realloc", bytes(get(l, "lost_by_failed_realloc.bytes"))]]);
		if (Array.isArray(l.largest) && l.largest.length)
			table(c, ["largest leaks", "bytes", "thread", "allocated at"], l.largest.slice(0, 10).map(function (b) {
				var sz = b.size !== undefined ? b.size : b.bytes; /* exact too, as the sizes card: 2,056 not 2.01 KiB */
				return [{ v: b.op || "block", cls: "l" }, bytes(sz) + (sz >= 1024 ? " (" + count(sz) + ")" : ""),
					isNum(b.tid) ? String(b.tid) : "–",
					ns(b.t !== undefined ? b.t : b.alloc_t)];
			}));
		if (Array.isArray(l.by_size) && l.by_size.length)
			table(c, ["by size", "blocks", "bytes"], l.by_size.slice(0, 10).map(function (b) {
				var label = b.size !== undefined ? bytes(b.size) + (b.size >= 1024 ? " (" + count(b.size) + ")" : "") :
					bytes(b.lo) + "–" + bytes(b.hi);
				return [label, count(b.count !== undefined ? b.count : b.blocks), bytes(b.bytes)];
			}));
		var fc = l.failed_calls;
		if (fc) {
			var causes = Object.keys(fc).filter(function (k) { return k !== "total" && isNum(fc[k]) && fc[k] > 0; });
			note(c, causes.length ? "Failed calls by cause: " + causes.map(function (k) {
				return k.replace(/_/g, " ") + " " + count(fc[k]);
			}).join(", ") + "." : "No call failed.");
		}
		if (!l.blocks) c.appendChild(el("p", "good", "No block was live at the end."));
	}

	function threadsCard(grid, t) {
		var th = t.threads;
		if (!th) return;
		var c = card(grid, "Threads: who frees what another allocated");
		tiles(c, [["threads", count(th.count)], ["cross-thread frees", count(get(th, "cross_frees.count"))],
			["cross-thread bytes", bytes(get(th, "cross_frees.bytes"))]]);
		var m = th.matrix;
		if (!Array.isArray(m) || !m.length) {
			c.appendChild(el("p", "empty", "Every block was freed by the thread that allocated it."));
			return;
		}
		var at = [], ft = [], cell = {}, max = 0;
		m.forEach(function (e) {
			var a = String(e.alloc_tid), f = String(e.free_tid);
			if (at.indexOf(a) < 0) at.push(a);
			if (ft.indexOf(f) < 0) ft.push(f);
			cell[a + "/" + f] = e;
			max = Math.max(max, e.count || 0);
		});
		function byId(x, y) {
			var nx = Number(x), ny = Number(y);
			return isNaN(nx) || isNaN(ny) ? String(x).localeCompare(String(y)) : nx - ny;
		}
		at.sort(byId);
		ft.sort(byId);
		var t2 = table(c, ["allocated by ↓ / freed by →"].concat(ft), at.map(function (a) {
			return [a].concat(ft.map(function (f) {
				var e = cell[a + "/" + f];
				return e ? { v: count(e.count) + " · " + bytes(e.bytes), title: count(e.count) + " frees, " + bytes(e.bytes) } : "";
			}));
		}));
		/* heat: shade each cell by its count */
		var trs = t2.tBodies[0].rows;
		at.forEach(function (a, i) {
			ft.forEach(function (f, j) {
				var e = cell[a + "/" + f];
				if (e && max) trs[i].cells[j + 1].style.background = "rgba(47,111,219," + (0.08 + 0.5 * e.count / max).toFixed(3) + ")";
			});
		});
	}

	function phasesCard(grid, t) {
		var ph = t.phases;
		if (!Array.isArray(ph) || !ph.length) return;
		var c = card(grid, "Phases", true);
		table(c, ["phase", "from", "to", "calls", "bytes requested", "peak live", "RSS growth"], ph.map(function (p) {
			return [{ v: p.name, cls: "l" }, ns(p.from_ns), ns(p.to_ns), count(p.calls), bytes(p.bytes_requested),
				bytes(p.peak_live), isNum(p.rss_growth_bytes_per_s) ? bytes(p.rss_growth_bytes_per_s) + "/s" : "–"];
		}));
	}

	/* ---- call sites: tables and flame graphs (traces recorded with --stacks) ---- */

	var SITE_TABLES = [["by_live_at_peak", "live at the peak", "live_at_peak_bytes"],
		["by_leaked", "leaked", "leaked_bytes"], ["by_bytes", "allocated", "bytes"],
		["by_allocs", "calls", "allocs"], ["by_temporaries", "temporary", "temporaries"],
		["by_fragmentation", "fragmentation at the peak", "fragmentation_bytes"],
		["by_calloc", "calloc bytes", "calloc_bytes"]];

	/*
	 * A C++ name as heaptrack shows it: template arguments folded to "<>"
	 * ("std::vector<int, std::allocator<int> >::push_back(int const&)" ->
	 * "std::vector<>::push_back(int const&)"), the parameters kept; "operator<",
	 * "operator<<" and "operator->" are not templates. The full name stays in
	 * the tooltips and the JSON.
	 */
	function shortName(name) {
		if (!name || name.indexOf("<") < 0) return name;
		var out = "", depth = 0;
		for (var i = 0; i < name.length; i++) {
			var ch = name[i];
			if ((ch === "<" || ch === ">") && /operator\s*[<>-]*$/.test(name.slice(0, i))) {
				if (!depth) out += ch;
				continue;
			}
			if (ch === "<") {
				if (!depth++) out += "<";
			} else if (ch === ">" && depth) {
				if (!--depth) out += ">";
			} else if (!depth) out += ch;
		}
		return out;
	}

	/* file:line, or without lines the return address in its module (for addr2line or objdump -d) */
	function where(o) {
		if (o.file) return o.file.split("/").pop() + ":" + o.line;
		return o.module && o.module_offset ? o.module.split("/").pop() + "+" + o.module_offset : "";
	}

	function sitesCard(grid, t) {
		var s = t.sites;
		if (!s || !s.recorded) return;
		var est = s.sampled ? "≈ " : "", flames = null;
		var c = card(grid, "Call sites: who allocated the memory" + (s.sampled ? " (estimates from a sample)" : ""), true);
		if (s.sampled)
			c.appendChild(el("p", "warn", "Recorded with --stack-sample: one allocation in about every " +
				bytes(s.sampled.mean_bytes) + " allocated has its stack, and each is counted as the " +
				"allocations it stands for, so every figure of the sites and flame graphs (marked ≈) is an " +
				"estimate; the other sections are exact."));
		var tabs = SITE_TABLES.filter(function (k) { return Array.isArray(s[k[0]]) && s[k[0]].length; });
		if (!tabs.length) {
			c.appendChild(el("p", "empty", "No site allocated anything."));
			return;
		}
		var bar = el("div", "tabs"), body = el("div");
		c.appendChild(bar);
		c.appendChild(body);
		function show(k) {
			Array.prototype.forEach.call(bar.children, function (b) { b.classList.toggle("on", b.textContent === k[1]); });
			body.textContent = "";
			/* the figures every table has, and the one its tab sorts by when it is another:
			 * nine columns did not fit a half screen */
			var extra = { by_temporaries: ["temporary", function (r) { return n(r.temporaries); }],
				by_fragmentation: ["fragmentation", function (r) { return b(r.fragmentation_bytes); }],
				by_calloc: ["calloc (fresh / reused)", function (r) {
					return r.calloc_bytes ? b(r.calloc_bytes) + (isNum(r.calloc_fresh_bytes) ? " (" +
						bytes(r.calloc_fresh_bytes) + " / " + bytes(r.calloc_reused_bytes) + ")" : "") : "–";
				}] }[k[0]];
			function b(v) { return v ? est + bytes(v) : bytes(v); }
			function n(v) { return v ? est + count(v) : count(v); }
			table(body, ["site (top by " + k[1] + ")", "where", "live at peak", "leaked", "allocated", "calls"]
				.concat(extra ? [extra[0]] : []), s[k[0]].slice(0, 15).map(function (r) {
				var fn = shortName(r.function) + (r.inlined_into ? " (inlined into " + shortName(r.inlined_into) + ")" : "");
				/* a site outside the program's sources (a container's allocate): the program's frame that called it */
				if (r.caller) fn += " · from " + shortName(r.caller.function) + " " + where(r.caller);
				/* charged to the wrapper's caller: the wrapper it went through */
				if (r.via) fn += " · via " + shortName(r.via);
				return [{ v: fn, cls: "l wrap", path: 1, title: r.function + (r.inlined_into ? "\ninlined into " + r.inlined_into : "") +
					"\n\n" + (r.stack || []).join("\n") + "\n(click: find it in the flame graph)",
					click: function () { if (flames) flames.find(r.function); } },
					{ v: where(r), cls: "l wrap", path: 1, title: r.file || r.module || "" },
					b(r.live_at_peak_bytes), b(r.leaked_bytes), b(r.bytes), n(r.allocs)].concat(extra ? [extra[1](r)] : []);
			}));
		}
		tabs.forEach(function (k) {
			var b = el("button", null, k[1]);
			b.type = "button";
			b.addEventListener("click", function () { show(k); });
			bar.appendChild(b);
		});
		show(tabs[0]);
		note(c, s.sites + " distinct sites. Fragmentation: at the peak of live bytes, the free bytes of each 4 KiB page " +
			"holding live blocks, shared among them by their bytes on the page (the recorded allocator's layout). " +
			"Hover a site for its heaviest stack, click it to find it in the flame graph.");
		flames = flameCard(grid, s, est);
	}

	/* An icicle (a flame graph with its root on top) on a canvas: click a frame
	 * to zoom into it, click an ancestor (above) or the root to zoom out; hover
	 * for the function, file:line, bytes and share. */
	var FLAMES = [["allocations", "bytes allocated"], ["live_at_peak", "live at the peak"], ["leaks", "leaked"]];
	var ROW = 18;

	function flameColor(n) {
		if (n.name === "(other)" || n.name === "[truncated]" || n.name === "[no stack]" || n.name === "all") return "#c9ced8";
		var h = 0;
		for (var i = 0; i < n.name.length; i++) h = (h * 31 + n.name.charCodeAt(i)) >>> 0;
		var hue = n.inlined ? 190 + h % 40 : 10 + h % 45;
		return "hsl(" + hue + ", " + (60 + h % 25) + "%, " + (62 + h % 12) + "%)";
	}

	function flameDepth(n) {
		var d = 0;
		(n.children || []).forEach(function (c) { d = Math.max(d, flameDepth(c)); });
		return d + 1;
	}

	function link(n, parent) {
		n.parent = parent;
		(n.children || []).forEach(function (c) { link(c, n); });
		return n;
	}

	function flameGraph(parent, root, what, est, term) {
		link(root, null);
		var wrap = el("div", "flame");
		var canvas = el("canvas");
		canvas.setAttribute("data-flame", what);
		var tip = el("div", "flame-tip");
		wrap.appendChild(canvas);
		wrap.appendChild(tip);
		parent.appendChild(wrap);
		var focus = root, rects = [];
		function path(n) {
			var p = [];
			for (; n; n = n.parent) p.unshift(n);
			return p;
		}
		function draw() {
			var above = path(focus).slice(0, -1), rows = above.length + flameDepth(focus);
			var w = Math.max(300, wrap.clientWidth), dpr = window.devicePixelRatio || 1;
			canvas.style.width = w + "px";
			canvas.style.height = rows * ROW + "px";
			canvas.width = Math.round(w * dpr);
			canvas.height = Math.round(rows * ROW * dpr);
			var g = canvas.getContext("2d");
			g.setTransform(dpr, 0, 0, dpr, 0, 0);
			g.clearRect(0, 0, w, rows * ROW);
			g.font = "11.5px " + getComputedStyle(document.body).fontFamily;
			g.textBaseline = "middle";
			rects = [];
			function box(n, x, y, bw, dim) {
				g.fillStyle = term && n.name.indexOf(term) >= 0 ? "#e040c8" : flameColor(n);
				g.globalAlpha = dim ? 0.45 : 1;
				g.fillRect(x, y, Math.max(bw - 1, 0.5), ROW - 1);
				g.globalAlpha = 1;
				rects.push({ x: x, y: y, w: bw, n: n });
				if (bw > 30) {
					g.fillStyle = "#1d2330";
					var label = shortName(n.name) + (n.recursion > 1 ? (n.cycle ? " ⟲×" : " ×") + n.recursion : ""),
						max = Math.floor((bw - 6) / 6.5);
					if (label.length > max) label = label.slice(0, Math.max(max - 1, 1)) + "…";
					g.fillText(label, x + 3, y + ROW / 2);
				}
			}
			above.forEach(function (n, i) { box(n, 0, i * ROW, w, true); });
			(function lay(n, x, y, bw) {
				box(n, x, y, bw, false);
				var cx = x;
				(n.children || []).forEach(function (c) {
					var cw = n.value ? bw * c.value / n.value : 0;
					if (cw >= 0.5) lay(c, cx, y + ROW, cw);
					cx += cw;
				});
			})(focus, 0, above.length * ROW, w);
			canvas.setAttribute("data-frames", String(rects.length));
			canvas.setAttribute("data-focus", focus.name);
		}
		function hit(ev) {
			var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
			for (var i = rects.length - 1; i >= 0; i--) {
				var q = rects[i];
				if (x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW) return q.n;
			}
			return null;
		}
		canvas.addEventListener("click", function (ev) {
			var n = hit(ev);
			if (!n) return;
			focus = n === focus && n.parent ? n.parent : n;
			draw();
		});
		canvas.addEventListener("mousemove", function (ev) {
			var n = hit(ev);
			if (!n) { tip.style.display = "none"; return; }
			tip.textContent = "";
			tip.appendChild(el("b", null, n.name + (n.inlined ? " (inlined)" : "")));
			/* a node merges the function's frames: a line only when they all have the same one */
			if (n.file) tip.appendChild(el("div", null, n.file + (n.line ? ":" + n.line : "")));
			/* a recursion is folded: a function calling itself into one frame, a cycle of
			 * functions calling each other into one round of frames; say how deep it went */
			if (n.recursion > 1 && n.cycle)
				tip.appendChild(el("div", null, "recursion: the cycle " + n.cycle.concat([n.cycle[0]]).join(" → ") +
					" up to " + count(n.recursion) + " rounds in a row, drawn as one round"));
			else if (n.recursion > 1)
				tip.appendChild(el("div", null, "recursion: up to " + count(n.recursion) + " calls of itself in a row, " +
					"drawn as one frame"));
			if (isNum(n.count))
				tip.appendChild(el("div", null, est + count(n.count) + (what === "allocations" ? " allocations" : " blocks")));
			tip.appendChild(el("div", null, est + bytes(n.value) + " · " + pct(root.value ? n.value / root.value : 0) +
				" of all" + (focus !== root && focus.value ? " · " + pct(n.value / focus.value) + " of " + focus.name : "")));
			var r = wrap.getBoundingClientRect();
			tip.style.display = "block";
			tip.style.left = Math.min(ev.clientX - r.left + 12, r.width - 260) + "px";
			tip.style.top = ev.clientY - r.top + 14 + "px";
		});
		canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
		draw();
		/* what the search matches: the bytes under frames whose name holds the term, a frame
		 * under a matching one not counted again (as FlameGraph's search does) */
		var matched = 0;
		(function sum(n) {
			if (term && n.name.indexOf(term) >= 0 && n.name !== "all") {
				matched += n.value;
				return;
			}
			(n.children || []).forEach(sum);
		})(root);
		canvas.setAttribute("data-matched", String(matched));
		return { canvas: canvas, matched: matched, total: root.value };
	}

	function flameCard(grid, s, est) {
		var fl = s.flame;
		if (!fl) return null;
		var kinds = FLAMES.filter(function (k) { return fl[k[0]] && fl[k[0]].value > 0; });
		if (!kinds.length) return null;
		var c = card(grid, "Flame graphs of the call stacks" + (s.sampled ? " (estimates from a sample)" : ""), true);
		var bar = el("div", "tabs"), body = el("div");
		var search = el("input", "flame-search"), found = el("span", "flame-found");
		search.type = "search";
		search.placeholder = "search frames (function name contains…)";
		search.setAttribute("aria-label", "search frames");
		c.appendChild(bar);
		c.appendChild(search);
		c.appendChild(found);
		c.appendChild(body);
		var boxEl = el("div");
		boxEl.setAttribute("data-chart", "1");
		charts++;
		var current = null, timer = null;
		function show(k) {
			current = k;
			Array.prototype.forEach.call(bar.children, function (b) { b.classList.toggle("on", b.textContent === k[1]); });
			boxEl.textContent = "";
			var term = search.value.trim(), r = flameGraph(boxEl, fl[k[0]], k[0], est || "", term);
			found.textContent = term ? (r.matched ? "matched " + (est || "") + bytes(r.matched) + ", " +
				pct(r.total ? r.matched / r.total : 0) + " of " + k[1] : "no frame matches") : "";
		}
		search.addEventListener("input", function () { if (current) show(current); });
		/* the canvas is drawn at the card's width: draw again when that changes (the zoom resets) */
		window.addEventListener("resize", function () {
			clearTimeout(timer);
			timer = setTimeout(function () { if (current) show(current); }, 150);
		});
		kinds.forEach(function (k) {
			var b = el("button", null, k[1]);
			b.type = "button";
			b.addEventListener("click", function () { show(k); });
			bar.appendChild(b);
		});
		body.appendChild(boxEl);
		show(kinds[0]);
		note(c, "Outermost frame on top, callees below, widths by bytes; inlined functions in blue, frames matching " +
			"the search in magenta. Click a frame to " +
			"zoom into it, click it again or a frame above to zoom out. At most " + (fl.max_nodes || "a few hundred") +
			" frames per graph, the rest folded into \"(other)\"; the same stacks as `allocrr analyze --collapsed`.");
		return {
			find: function (name) {
				search.value = name;
				if (current) show(current);
				c.scrollIntoView({ block: "start" });
			}
		};
	}

	function traceSection(t, idx) {
		var sec = el("section");
		sec.id = "trace-" + idx;
		app.appendChild(sec);
		var path = get(t, "trace.path") || ("trace " + (idx + 1));
		var h = el("h2", "trace-title");
		h.appendChild(el("code", null, path));
		sec.appendChild(h);
		var a = el("a", null, path.split("/").pop());
		a.href = "#" + sec.id;
		toc.appendChild(a);
		var tr = t.trace || {};
		var argv = Array.isArray(tr.argv) ? tr.argv.join(" ") : (tr.argv || "");
		sec.appendChild(el("p", "meta", [tr.exe ? "program " + tr.exe : "", argv ? "argv: " + argv : "",
			isNum(tr.pid) ? "pid " + tr.pid : "", isNum(tr.events) ? count(tr.events) + " events" : "",
			tr.ending ? "ended: " + tr.ending : "", tr.truncated ? "TRUNCATED" : ""].filter(Boolean).join(" · ")));
		overview(sec, t);
		var als = Array.isArray(t.allocators) ? t.allocators : [];
		var grid = el("div", "grid");
		sec.appendChild(grid);
		memoryOverTime(grid, t);
		replayOverTime(grid, t, als);
		fragmentation(grid, als);
		times(grid, als);
		sizes(grid, t);
		lifetimes(grid, t);
		zeroing(grid, t, als);
		latency(grid, als);
		leaksCard(grid, t);
		sitesCard(grid, t);
		threadsCard(grid, t);
		phasesCard(grid, t);
	}

	var traces = data.traces || [];
	document.getElementById("subtitle").textContent = "allocrr " + (data.allocrr || "") + " · " + traces.length +
		" trace" + (traces.length === 1 ? "" : "s") + (data.generated ? " · " + data.generated : "");
	checksSection(app);
	traces.forEach(traceSection);
	if (!traces.length) app.appendChild(el("p", "empty", "This report holds no trace."));
	document.body.setAttribute("data-charts", String(charts));
	document.body.setAttribute("data-ready", "1");
})();
