/* "Find the GPU your model fits in" (docs/gpu-finder.*.md).
 *
 * Every number comes from the guide's calculator (vram/), never from this script:
 * - the reference jobs (finder.yaml's defaults for each model, task, card count and method
 *   or context) are precomputed at build time by hooks/finder/compute.py: assets/finder.json
 *   (the form's data: models, tasks, cards, which choices are offered and why the others are
 *   not) is fetched when the reader starts using the form, assets/finder-results.json (the
 *   answers) the first time a choice needs one (the default answer is in the page);
 * - any other job (sequence length, micro-batch, optimizer, offload, serving weights,
 *   concurrency, the reader's own config.json…) goes to assets/finder-worker.js, where
 *   Pyodide runs the same vram package (vram.job.answer_json), started on the first such job.
 * This script selects, shows or hides controls, and formats numbers for the page's language
 * with Intl.NumberFormat; it does no arithmetic on the data. It builds the same structure
 * as the static result rendered for readers without JavaScript.
 */
(function () {
  "use strict";

  // The worker is a file beside this script (assets/finder-worker.js).
  var workerURL = new URL("finder-worker.js", document.currentScript.src);
  var form = document.getElementById("finder-form");
  var labelsNode = document.getElementById("finder-labels");
  if (!form || !labelsNode) return;

  var labels = JSON.parse(labelsNode.textContent);
  var lang = document.documentElement.lang || "it";
  var NBSP = "\u00a0";
  var CUSTOM = "custom";
  // useGrouping "always": 2.048 as the rest of the site writes it (Babel), not 2048.
  var formats = {
    gb: new Intl.NumberFormat(lang, { maximumFractionDigits: 1, useGrouping: "always" }),
    whole: new Intl.NumberFormat(lang, { maximumFractionDigits: 0, useGrouping: "always" }),
    decimal: new Intl.NumberFormat(lang, { maximumFractionDigits: 2, useGrouping: "always" }),
    percent: new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 }),
    eur: new Intl.NumberFormat(lang, { style: "currency", currency: "EUR", useGrouping: "always" })
  };
  var CHOICE = ["model", "task", "cards", "method", "context"];
  // The task names the optimizer (training) or the weights' format (serving); these are the rest.
  var JOB_INPUTS = ["offload", "seq_len", "micro_batch", "grad_accum", "recompute", "attention", "rank", "targets",
    "kv_dtype", "concurrent", "gpu_memory_utilization", "max_num_batched_tokens", "tokens", "host_ram_gb"];
  // The reader's price per hour of the machine of each card (price_KEY, hooks/finder.py's _prices_field).
  var PRICES = Array.prototype.map.call(form.querySelectorAll('input[id^="finder-price_"]'), function (input) {
    return input.name;
  });
  JOB_INPUTS = JOB_INPUTS.concat(PRICES);
  var INTEGERS = ["seq_len", "micro_batch", "grad_accum", "rank", "concurrent", "max_num_batched_tokens", "tokens",
    "host_ram_gb", "context"];
  var DECIMALS = ["gpu_memory_utilization"].concat(PRICES);
  var KEPT_CONFIG = "gpu-finder:config.json";  // sessionStorage: this tab only, both languages (same origin)
  var controls = {};
  CHOICE.concat(JOB_INPUTS).forEach(function (name) { controls[name] = document.getElementById("finder-" + name); });
  var configBox = document.getElementById("finder-config");
  var configFile = document.getElementById("finder-config-file");
  var errorLine = document.getElementById("finder-error");
  var out = {
    results: document.getElementById("finder-results"),
    status: document.getElementById("finder-status"),
    order: document.getElementById("finder-order"),
    wrap: document.getElementById("finder-table-wrap"),
    why: document.getElementById("finder-why"),
    note: document.getElementById("finder-note")
  };

  function fill(template, fields) {
    return template.replace(/\{(\w+)\}/g, function (match, key) {
      return Object.prototype.hasOwnProperty.call(fields, key) ? String(fields[key]) : match;
    });
  }

  function gb(value) {
    return formats.gb.format(value) + NBSP + labels.unit_gb;
  }

  // A part that is not zero but rounds to it: "less than 0,1 GB", not "0 GB" (page.py's _part_gb).
  function partGb(value) {
    var shown = gb(value);
    if (value <= 0 || shown !== gb(0)) return shown;
    return fill(labels.part_below, { size: gb(0.1) });
  }

  function byKey(list) {
    var map = {};
    list.forEach(function (item) { map[item.key] = item; });
    return map;
  }

  function selectedText(select) {
    return select.options[select.selectedIndex].text;
  }

  function element(tag, text, attributes) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    Object.keys(attributes || {}).forEach(function (name) { node.setAttribute(name, attributes[name]); });
    return node;
  }

  // A number as the reader types it in the page's language (Babel's symbols, in the labels)
  // -> the canonical text the calculator and the URL use: "0,9" or "0.9" -> "0.9",
  // "1.000.000.000" (it) or "1 000 000 000" (fr) -> "1000000000". Anything else stays as
  // typed, and the calculator refuses it in one line.
  function escaped(text) {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function canonical(name, text) {
    var typed = text.trim();
    if (INTEGERS.indexOf(name) >= 0) {
      var group = labels.group_symbol;
      var flat = typed.replace(/[ \u00a0\u202f]/g, group);
      if (new RegExp("^[0-9]{1,3}(" + escaped(group) + "[0-9]{3})+$").test(flat)) return flat.split(group).join("");
      return typed;
    }
    if (PRICES.indexOf(name) >= 0) return canonicalPrice(typed);
    if (DECIMALS.indexOf(name) >= 0 && /^[0-9]*[.,][0-9]+$/.test(typed)) return typed.replace(",", ".");
    return typed;
  }

  // A price as the page writes it: thousands grouped with the locale's sign (fr: a space, it: a
  // point) and a decimal comma -> "1200.5". "1.200" alone (a point, three digits, no comma) stays
  // as typed: 1.2 or 1200? vram.billing.parse_price refuses it, as the command line does. A
  // decimal comma before three digits ("1,200": 1.2) loses its trailing zeros, so that it never
  // reads as that ambiguous text.
  function canonicalPrice(typed) {
    var sign = labels.group_symbol;
    var flat = /^[ \u00a0\u202f]$/.test(sign) ? typed.replace(/[ \u00a0\u202f]/g, sign) : typed;
    var grouped = new RegExp("^([0-9]{1,3}(?:" + escaped(sign) + "[0-9]{3})+)(?:,([0-9]+))?$").exec(flat);
    var ambiguous = sign === "." && grouped && grouped[2] === undefined && grouped[1].split(".").length === 2;
    if (grouped && !ambiguous) return grouped[1].split(sign).join("") + (grouped[2] !== undefined ? "." + grouped[2] : "");
    var comma = /^([0-9]*),([0-9]+)$/.exec(typed);
    if (!comma) return typed;
    var fraction = comma[2].length === 3 ? comma[2].replace(/0+$/, "") : comma[2];
    return (comma[1] || "0") + (fraction ? "." + fraction : "");
  }

  // The canonical text (a link's value) as the page writes it: "0.9" -> "0,9", 1000000000 grouped.
  function localised(name, text) {
    if (DECIMALS.indexOf(name) >= 0 && /^[0-9]*\.[0-9]+$/.test(text)) return text.replace(".", labels.decimal_symbol);
    if (name === "tokens" && /^[0-9]{1,15}$/.test(text)) return formats.whole.format(Number(text));
    return text;
  }

  // The reader's pasted config.json, kept in this tab across the language switch (never sent).
  // keptConfig(text) keeps it and returns it; keptConfig() returns the one kept, or "".
  function keptConfig(text) {
    try {
      if (text === undefined) return window.sessionStorage.getItem(KEPT_CONFIG) || "";
      window.sessionStorage.setItem(KEPT_CONFIG, text);
    } catch (error) {
      // storage refused (site data blocked, or over quota): the config stays in the page only,
      // and an older one kept in the tab does not come back in its place
      try { window.sessionStorage.removeItem(KEPT_CONFIG); } catch (ignored) { /* no storage at all */ }
    }
    return text === undefined ? "" : text;
  }

  function fieldName(field) {
    var label = form.querySelector('label[for="finder-' + field + '"]');
    return label ? label.textContent : field;
  }

  // --- the calculator in a worker, started on the first job that is not precomputed ---------
  var worker = null;
  var pending = {};
  var asked = 0;

  // The worker starts from a blob: wrapper that imports finder-worker.js: a worker started
  // from the script's own URL would take the policy of that file's HTTP response (none on
  // GitHub Pages), one from a blob: takes this page's Content-Security-Policy.
  function calculator() {
    if (!worker) {
      var wrapper = new Blob(["import " + JSON.stringify(workerURL.href) + ";\n"], { type: "text/javascript" });
      worker = new Worker(URL.createObjectURL(wrapper), { type: "module" });
      worker.onmessage = function (event) {
        var reply = event.data;
        if (reply.boot) {  // how long the worker took to start, by phase (bench/finder.py reads it)
          form.bootTimes = reply.boot;
          return;
        }
        var done = pending[reply.id];
        delete pending[reply.id];
        if (done) done(reply);
      };
    }
    return worker;
  }

  function ask(message) {
    asked += 1;
    var id = asked;
    return new Promise(function (resolve) {
      pending[id] = resolve;
      message.id = id;
      calculator().postMessage(message);
    });
  }

  // The page's calculator, for checks that send it many jobs (tests/browser/test_finder_jobs.py).
  form.ask = ask;

  // Pyodide takes seconds to start: the worker starts as soon as the reader enters a field
  // whose change leaves the precomputed answers (a job input, the config.json box), so it
  // boots while they type; choosing among the precomputed answers never starts it.
  form.addEventListener("focusin", function (event) {
    var target = event.target;
    if (target === configBox || target === configFile
        || JOB_INPUTS.some(function (name) { return controls[name] === target; })) calculator();
  });

  function start(data) {
    var models = byKey(data.models);
    var tasks = byKey(data.tasks);
    var gpus = byKey(data.gpus);
    var methods = byKey(data.methods);
    var shown = 0;  // the latest render; an older worker answer is dropped
    var staticShown = true;  // the page still shows the default answer rendered with it
    var results = null;

    // The reference answers (finder-results.json, beside finder.json): fetched the first time a
    // choice needs one, not before: a job the calculator computes never needs them.
    function referenceAnswers() {
      if (!results) {
        results = fetch(new URL("finder-results.json", jsonURL())).then(function (response) {
          if (!response.ok) throw new Error(response.status + " " + response.statusText);
          return response.json();
        });
        results.catch(function () { results = null; });  // a later choice tries again
      }
      return results;
    }

    function isDefault(choice) {
      var d = data.default;
      var option = tasks[d.task].kind === "serving" ? String(d.context) : d.method;
      return choice.join("\n") === [d.model, d.task, String(d.cards), option].join("\n");
    }

    function kind() {
      return tasks[controls.task.value].kind;
    }

    // The task whose reference answers a task shows: its own, or those of the task it answers as
    // (finder.yaml's answers_of: the same job, computed once).
    function answered(taskKey) {
      return tasks[taskKey].answers_of || taskKey;
    }

    // The reference job of the chosen task: finder.yaml's settings, as hooks/finder/compute.py's job().
    function defaults() {
      var reference = {
        offload: "none",
        seq_len: String(data.activations.seq_length), micro_batch: String(data.activations.micro_batch),
        grad_accum: String(data.grad_accum),
        recompute: "none", attention: "", rank: String(data.lora.rank), targets: "all-linear",
        kv_dtype: data.serving.kv_dtype,
        concurrent: String(data.serving.concurrent), gpu_memory_utilization: String(data.serving.gpu_memory_utilization),
        max_num_batched_tokens: String(data.serving.max_num_batched_tokens),
        tokens: String(data.run_tokens), host_ram_gb: ""
      };
      PRICES.forEach(function (name) { reference[name] = ""; });
      return reference;
    }

    // Serving: the context typed is one the reference answers hold (finder.yaml's contexts,
    // within the model's maximum, on cards vLLM can split the model over).
    function precomputedContext() {
      var typed = canonical("context", controls.context.value);
      return /^[1-9][0-9]*$/.test(typed)
        && offered(controls.model.value, controls.task.value, controls.cards.value).indexOf(typed) >= 0;
    }

    function relevant(name) {
      var field = controls[name].closest("[data-kinds]");
      return !field || field.getAttribute("data-kinds").split(" ").indexOf(kind()) >= 0;
    }

    function isReference() {
      if (controls.model.value === CUSTOM) return false;
      if (kind() === "serving" && !precomputedContext()) return false;
      var reference = defaults();
      return JOB_INPUTS.every(function (name) { return !relevant(name) || canonical(name, controls[name].value) === reference[name]; });
    }

    // Offer only the choices the calculator answers (finder.json's offered); a refused one is
    // greyed out and the line under its control says which and why (finder.json's refused:
    // the reason's words are labels.refused_REASON), a touch screen showing no tooltip.
    // Keep the current choice if offered, else the first (or last).
    function offer(select, available, reasons, preferLast) {
      var options = Array.prototype.slice.call(select.options);
      var refused = [];
      options.forEach(function (option) {
        option.disabled = available.indexOf(option.value) < 0;
        if (option.disabled) refused.push(option);
      });
      if (select.selectedOptions[0].disabled) {
        var allowed = options.filter(function (option) { return !option.disabled; });
        if (allowed.length) select.value = allowed[preferLast ? allowed.length - 1 : 0].value;
      }
      var line = document.getElementById(select.id + "-refused");
      var why = {};
      refused.forEach(function (option) {
        var reason = reasons(option.value) || "not_computed";
        (why[reason] = why[reason] || []).push(option.text);
      });
      line.textContent = Object.keys(why).map(function (reason) {
        return fill(why[reason].length === 1 ? labels.unavailable_one : labels.unavailable_many, {
          choices: why[reason].join(", "), reason: labels["refused_" + reason] || labels.not_computed
        });
      }).join(" ");
      line.hidden = refused.length === 0;
    }

    function clearOffers() {
      ["task", "cards", "method"].forEach(function (name) {
        Array.prototype.forEach.call(controls[name].options, function (option) { option.disabled = false; });
        document.getElementById("finder-" + name + "-refused").hidden = true;
      });
    }

    // finder.json's offered and refused for a model, task, card count (each level optional).
    function offered(model, task, cards) {
      var level = data.offered[model] || {};
      if (task === undefined) return Object.keys(level);
      level = level[task] || {};
      return cards === undefined ? Object.keys(level) : level[cards] || [];
    }

    // Why a choice is refused: an option's reason, or for a task or a card count refused as a
    // whole the reason its choices share (``own``, the reason of that level itself, where
    // they differ: a card count vLLM cannot split the model over, some contexts too long too).
    function refusedWhy(own, model, task, cards, option) {
      var node = data.refused[model] || {};
      [task, cards].forEach(function (key) { if (key !== undefined) node = node[key] || {}; });
      if (option !== undefined) return node[option];
      var reasons = {};
      (function collect(level) {
        Object.keys(level).forEach(function (key) {
          if (typeof level[key] === "string") reasons[level[key]] = true;
          else collect(level[key]);
        });
      })(node);
      var found = Object.keys(reasons);
      return found.length === 1 ? found[0] : reasons[own] ? own : undefined;
    }

    function updateControls() {
      var custom = controls.model.value === CUSTOM;
      var model = controls.model.value;
      if (!custom) {  // a task the model cannot run (MXFP4 weights: gpt-oss only) is greyed out
        offer(controls.task, offered(model), function (task) { return refusedWhy("weights", model, task); });
      }
      var current = kind();
      form.querySelectorAll("[data-kinds]").forEach(function (field) {
        var wanted = field.getAttribute("data-kinds").split(" ");
        field.hidden = wanted.indexOf("custom") >= 0 ? !custom : wanted.indexOf(current) < 0;
      });
      document.getElementById("finder-context-hint").hidden = controls.cards.value === "1";
      methodLabels();
      if (custom) return clearOffers();
      var task = controls.task.value;
      offer(controls.cards, offered(model, task), function (cards) { return refusedWhy("cards", model, task, cards); });
      var cards = controls.cards.value;
      if (current !== "serving") {
        offer(controls.method, offered(model, task, cards), function (method) {
          return refusedWhy(undefined, model, task, cards, method);
        });
      } else {
        document.getElementById("finder-method-refused").hidden = true;
      }
    }

    // Each method named as the calculator computes the chosen task under it (finder.json's
    // tasks[].accounting, vram.accounting's names; their labels from finder.yaml's accountings),
    // the method's own name where the task refuses it.
    function methodLabels() {
      var computed = tasks[controls.task.value].accounting || {};
      Array.prototype.forEach.call(controls.method.options, function (option) {
        var name = computed[option.value];
        option.textContent = name ? labels["accounting_" + name] : labels["method_" + option.value];
      });
    }

    function choiceText(found, serving) {
      var parts = [selectedText(controls.model), selectedText(controls.task),
        controls.cards.value === "1" ? labels.cards_one : fill(labels.cards_many, { cards: controls.cards.value })];
      if (serving) parts.push(fill(labels.context_option, { tokens: formats.whole.format(Number(canonical("context", controls.context.value))) }));
      // the calculator's answer names what it computed (answer_job's accounting); a reference answer, the task's
      else parts.push(found.accounting ? labels["accounting_" + found.accounting] : selectedText(controls.method));
      return fill(labels.caption, { choice: parts.join(", ") });
    }

    // The fitting cards in the order the calculator ranked their runs (answer_job's run.order:
    // by cost when every machine has a price, else by time); without a run, smallest first.
    function ordered(found) {
      if (!found.run) return found.fits;
      var byGpu = {};
      found.fits.forEach(function (fit) { byGpu[fit.gpu] = fit; });
      return found.run.order.map(function (key) { return byGpu[key]; });
    }

    // The price of a card's machine the run is costed at (answer_job's time.price_eur_per_hour):
    // the one the reader typed, else the guide's; none for a machine neither gives.
    function priceText(fit, cards, job) {
      var typed = job && value("price_" + fit.gpu) !== "";
      var machine = data.machines[fit.gpu + "@" + cards];
      if (typed && fit.time && fit.time.price_eur_per_hour !== null) {
        return fill(labels.price_yours, { price: formats.eur.format(Number(fit.time.price_eur_per_hour)) });
      }
      if (!machine) return labels.no_price;
      return fill(labels.price_guide, { price: formats.eur.format(machine.price_eur_per_hour_from) });
    }

    // Each body cell carries its column's heading (data-label): on a phone each row is a card.
    function table(found, cards, serving, context, job) {
      var node = element("table", null, { id: "finder-table" });
      node.appendChild(element("caption", choiceText(found, serving)));
      var head = element("tr");
      var decoding = found.fits.some(function (fit) { return fit.decode; });
      var headings = ["col_card", "col_memory", "col_margin", "col_price"].concat(found.run ? ["col_run"] : [])
        .concat(decoding ? ["col_decode"] : []).map(function (key) { return labels[key]; });
      headings.forEach(function (heading) { head.appendChild(element("th", heading, { scope: "col" })); });
      node.appendChild(element("thead")).appendChild(head);
      var body = node.appendChild(element("tbody"));
      var asked = job ? job.recompute : "none";  // a reference job asks for no recomputation
      ordered(found).forEach(function (fit) {
        var gpu = gpus[fit.gpu];
        var row = body.appendChild(element("tr"));
        var column = 0;
        function cell(text) {
          column += 1;
          return row.appendChild(element("td", text, { "data-label": headings[column] }));
        }
        row.appendChild(element("th", gpu.name, { scope: "row" }));
        cell(gb(gpu.memory_gb));  // nvidia-smi's total, in GB
        var margin = fit.max_concurrent !== undefined
          ? fill(labels.margin_serving, { margin: gb(fit.margin_gb), free: formats.percent.format(fit.free_fraction),
            count: formats.whole.format(fit.max_concurrent), context: formats.whole.format(context) })
          : fill(labels.margin_cell, { margin: gb(fit.margin_gb), free: formats.percent.format(fit.free_fraction) });
        var marginCell = cell(margin);
        if (fit.recompute === "full" && asked !== "full") {  // only full recomputation lets the activations fit
          marginCell.appendChild(document.createTextNode(" "));
          marginCell.appendChild(element("strong", labels.recompute_needed, { "class": "finder-flag" }));
        }
        if (fit.tight) {  // vram.fit.is_tight: under a tenth of the card free at the job's peak
          marginCell.appendChild(document.createTextNode(" "));
          marginCell.appendChild(element("strong", labels.tight, { "class": "finder-tight" }));
        }
        if (fit.host_ram) marginCell.appendChild(ramVerdict(fit.host_ram));
        cell(priceText(fit, cards, job));
        if (fit.time) cell(runText(fit.time));
        if (decoding) cell(fit.decode ? decodeText(fit.decode) : "");
      });
      return node;
    }

    // Whether the machine's RAM holds the offload (answer_job's verdict); greyed, with the
    // reason, where the machine's RAM is not known.
    function ramVerdict(ram) {
      var node = element("span", null, { "class": "finder-ram" });
      node.appendChild(document.createTextNode(" "));
      if (ram.holds === null) {
        node.appendChild(element("span", labels.ram_unknown, { "class": "finder-unknown", title: labels.ram_unknown_why }));
      } else {
        node.appendChild(element(ram.holds ? "span" : "strong",
          fill(ram.holds ? labels.ram_holds : labels.ram_short, { ram: gb(ram.machine_gb) })));
      }
      return node;
    }

    // answer_job's run of one card ([low, high] seconds, euros as decimal strings), formatted.
    function span(low, high) {
      return low === high ? low : fill(labels.span, { low: low, high: high });
    }

    // A number and its unit, joined by typography.yaml's space before a unit (labels.unit_space).
    function withUnit(number, unit) {
      return number + labels.unit_space + labels["unit_" + unit];
    }

    // One end of a run as vram.timing.shown_duration rounded it (hooks/locale_format.py's format_duration_parts).
    function durationText(parts) {
      var shown = parts.map(function (part) { return withUnit(formats.gb.format(part[1]), part[0]); });
      return shown.length === 1 ? shown[0] : fill(labels.days_hours, { days: shown[0], hours: shown[1] });
    }

    // A run's [low, high] (hooks/locale_format.py's format_duration_range).
    function durationSpan(low, high) {
      if (low.length === 1 && high.length === 1 && low[0][0] === high[0][0]) {
        return withUnit(span(formats.gb.format(low[0][1]), formats.gb.format(high[0][1])), low[0][0]);
      }
      var lowText = durationText(low), highText = durationText(high);
      return lowText === highText ? lowText : fill(labels.range_words, { low: lowText, high: highText });
    }

    // A card's decoding bound (answer_job's decode, hooks/finder.py's decode_text).
    function decodeText(decode) {
      var perSequence = withUnit(formats.whole.format(decode.tokens_per_s_per_sequence_at_most), "tokens_per_s");
      var total = withUnit(formats.whole.format(decode.tokens_per_s_at_most), "tokens_per_s");
      var shown = perSequence === total ? fill(labels.decode_one, { per_sequence: perSequence })
        : fill(labels.decode_cell, { per_sequence: perSequence, total: total });
      if (decode.tokens_per_s_per_sequence) {  // the published decoding runs' share of the bound (page.py's decode_text)
        var realistic = withUnit(span(formats.whole.format(decode.tokens_per_s_per_sequence[0]),
          formats.whole.format(decode.tokens_per_s_per_sequence[1])), "tokens_per_s");
        var backing = typeof decode.backing === "number" ? data.backings[decode.backing] : decode.backing;
        var label = backing && !backing.exact ? labels.decode_estimated : labels.decode_realistic;  // no run of this card and job
        shown += labels.part_separator + fill(label, { range: realistic }) + " (" + backingText(decode.backing) + ")";
      }
      return shown;
    }

    // Which published runs back a time (answer_job's backing; page.py's backing_text).
    function backingText(backing) {
      if (typeof backing === "number") backing = data.backings[backing];  // finder.json names each once
      if (!backing) return "";
      var runs = formats.whole.format(backing.runs);
      if (!backing.exact) return backing.runs === 1 ? labels.backing_none_one : fill(labels.backing_none_many, { runs: runs });
      var count = backing.sources.length;
      var sources = count === 1 ? labels.backing_sources_one : fill(labels.backing_sources_many, { sources: formats.whole.format(count) });
      return fill(backing.on_card ? labels.backing_runs : labels.backing_other, { family: backing.family, runs: runs, sources: sources });
    }

    function runText(time) {
      var cost = time.cost_eur === null ? "" : fill(labels.run_cost, {
        cost: span(formats.eur.format(Number(time.cost_eur[0])), formats.eur.format(Number(time.cost_eur[1]))),
        price: formats.eur.format(Number(time.price_eur_per_hour))
      });
      var shown = fill(labels.run_cell, {
        step: withUnit(span(formats.decimal.format(time.step_s[0]), formats.decimal.format(time.step_s[1])), "s"),
        bound: labels["bound_" + time.bound],
        run: durationSpan(time.run_shown[0], time.run_shown[1]),
        cost: cost
      });
      var backing = backingText(time.backing);
      return backing ? shown + " (" + backing + ")" : shown;
    }

    // The batch per optimizer step (answer_job's batch, vram.job.global_batch), hooks/finder/page.py's batch_text.
    function batchText(batch, tokens) {
      return fill(labels.batch, {
        global_batch: formats.whole.format(batch.global_batch), micro_batch: formats.whole.format(batch.micro_batch),
        grad_accum: formats.whole.format(batch.grad_accum), cards: formats.whole.format(batch.cards),
        tokens_per_step: formats.whole.format(batch.tokens_per_step), steps: formats.whole.format(batch.optimizer_steps),
        tokens: formats.whole.format(tokens)
      });
    }

    // One machine is named alone, with a word on its price when it has none; by time, the machines
    // without a price are named, or the line says none has one; when the first of several has no
    // published run of its own class, a sentence says so (page.py's ranking_text).
    function rankingText(found, cards) {
      var run = found.run;
      var ranked = rankedText(run, cards);
      var first = found.fits.filter(function (fit) { return fit.gpu === run.order[0]; })[0];
      var backing = first && first.time ? first.time.backing : null;
      if (run.order.length > 1 && backing && !backing.exact) {
        ranked += " " + fill(labels.ranked_first_unbacked, { gpu: gpus[first.gpu].name });
      }
      return ranked;
    }

    function rankedText(run, cards) {
      if (run.order.length === 1) {
        return fill(labels[(run.unpriced || []).length ? "ranked_one_unpriced" : "ranked_one"], {
          tokens: formats.whole.format(run.tokens), order: gpus[run.order[0]].name
        });
      }
      var unpriced = run.unpriced || [];
      var nonePriced = run.ranked_by === "time" && run.order.every(function (key) { return unpriced.indexOf(key) >= 0; });
      return fill(labels[nonePriced ? "ranked_time_none_priced" : "ranked_" + run.ranked_by], {
        tokens: formats.whole.format(run.tokens),
        order: run.order.map(function (key) { return gpus[key].name; }).join(", "),
        unpriced: unpriced.map(function (key) { return cards + NBSP + "×" + NBSP + gpus[key].name; }).join(", ")
      });
    }

    function reserveText() {
      return formats.gb.format(data.reserve_gib) + NBSP + labels.unit_gib;
    }

    // The note under the table in paragraphs (page.py's finder_table: the same groups): what the
    // margin holds (with what was read from a pasted config.json), the machine's RAM and QLoRA's
    // storage, the global batch, where the times come from with their warnings.
    function noteText(found, serving, context, job) {
      var reserve = reserveText();
      var holds = [], memory = [], batch = [], sources = [];
      if (serving) {
        holds.push(fill(labels.serving_job, {
          concurrent: formats.whole.format(job ? job.concurrent : data.serving.concurrent), context: formats.whole.format(context),
          kv_dtype: job ? job.kv_dtype : data.serving.kv_dtype, kv: gb(found.kv_per_sequence_gb),
          share: formats.percent.format(job ? job.gpu_memory_utilization : data.serving.gpu_memory_utilization),
          reserve: reserve,
          chunk: formats.whole.format(job ? job.max_num_batched_tokens : data.serving.max_num_batched_tokens)
        }));
      } else if (job) {
        var act = found.activations;
        holds.push(fill(labels.activations_job, {
          seq: formats.whole.format(act.seq_len), micro_batch: formats.whole.format(act.micro_batch),
          attention: act.attention, recompute: labels["recompute_" + act.recompute],
          asked: gb(act.gb), full: gb(act.full_gb), reserve: reserve
        }));
        if (found.host_gb) memory.push(fill(labels.host_ram, { host: gb(found.host_gb) }));
        if (found.fits.some(function (fit) { return fit.host_ram && fit.host_ram.holds === null; })) {
          memory.push(labels.ram_unknown_why);
        }
        if ((found.notes || []).some(function (note) { return note.indexOf("bnb_4bit_quant_storage") >= 0; })) {
          memory.push(labels.qlora_storage);  // vram.job's QLORA_STORAGE_NOTE: QLoRA split under ZeRO-3 or FSDP2
        }
      } else {
        var model = models[controls.model.value];
        holds.push(fill(labels["activations_" + kind()], {
          model: model.name, seq: formats.whole.format(data.activations.seq_length),
          micro_batch: formats.whole.format(data.activations.micro_batch),
          attention: model.activation_gb.attention,
          none: gb(model.activation_gb.none), full: gb(model.activation_gb.full), reserve: reserve
        }));
      }
      if (!serving) batch.push(batchText(found.batch || data.batches[controls.cards.value], job ? job.tokens : data.run_tokens));
      if (found.run) {
        sources.push(labels.run_source);  // the sources, as `python -m vram time` names them
        var params = job ? found.params : (models[controls.model.value] || {}).params;  // page.py's warning_texts
        (found.run.warnings || []).forEach(function (warning) {
          sources.push(labels["warn_" + warning]);
          if (warning === "communication_bound" && params >= Number(labels.tensor_parallel_params)) {
            sources.push(labels.warn_tensor_parallel);
          }
        });
      }
      if (serving && (found.fits || []).some(function (fit) { return fit.decode && fit.decode.backing !== null && fit.decode.backing !== undefined; })) {
        sources.push(labels.decode_source);  // page.py's decode_source_text: how far the range beside the roofline held
      }
      (found.warnings || []).forEach(function (warning) { sources.push(labels["warn_" + warning]); });  // no card fits
      if (job && controls.model.value === CUSTOM) {  // what vram read from the pasted config.json, to check
        holds.unshift(fill(labels.config_read, {
          family: found.model_type, layers: formats.whole.format(found.layers), params: formats.whole.format(found.params)
        }));
      }
      return [holds, memory, batch, sources]
        .filter(function (group) { return group.length; })
        .map(function (group) { return group.join(" "); });
    }

    // The note's paragraphs, a space between them (its text reads as one, as page.py writes it).
    function showNote(paragraphs) {
      out.note.textContent = "";
      paragraphs.forEach(function (text, i) {
        if (i) out.note.appendChild(document.createTextNode(" "));
        out.note.appendChild(element("p", text));
      });
    }

    function show(found, job) {
      var serving = kind() === "serving";
      var context = job ? job.context : Number(canonical("context", controls.context.value));
      var fits = found.fits;
      out.wrap.textContent = "";
      // What the figure per card holds, then the verdict (as hooks/finder/page.py's summary_text).
      var needText = fill(serving ? labels.need_serving : labels.need_training, {
        need: gb(found.per_gpu_gb), reserve: reserveText()
      });
      var status;
      if (fits.length === 0) {
        status = fill(serving ? labels.summary_none_serving : labels.summary_none, { need_text: needText });
      } else {
        status = fill(fits.length === 1 ? labels.summary_one : labels.summary_many, {
          need_text: needText, count: fits.length, gpu: gpus[fits[0].gpu].name, margin: gb(fits[0].margin_gb)
        });
        if (fits[0].recompute === "full" && (job ? job.recompute : "none") !== "full") status += " " + labels.summary_recompute;
        out.wrap.appendChild(table(found, controls.cards.value, serving, context, job));
      }
      out.order.textContent = found.run && fits.length ? rankingText(found, controls.cards.value) : "";
      out.order.hidden = !out.order.textContent;
      if (found.short.length) {  // they hold the model states, not the activations
        status += " " + fill(labels.summary_short, {
          cards: found.short.map(function (fit) {
            return fill(labels.short_card, { gpu: gpus[fit.gpu].name, margin: gb(fit.margin_gb) });
          }).join(", ")
        });
      }
      out.status.textContent = status;
      out.why.textContent = fill(labels.why, {
        parts: found.parts.map(function (part) {
          return fill(labels.part_size, { part: labels["part_" + part[0]], size: partGb(part[part.length - 1]) });
        }).join(labels.part_separator)
      });
      showNote(noteText(found, serving, context, job));
      offerPrices(fits);
    }

    // A price field for each machine that fits (the others are kept, hidden, with what was typed).
    function offerPrices(fits) {
      var fitting = fits.map(function (fit) { return "price_" + fit.gpu; });
      PRICES.forEach(function (name) {
        controls[name].closest(".finder-price").hidden = fitting.indexOf(name) < 0;
      });
      form.querySelector(".finder-prices").hidden = fitting.length === 0;
    }

    function showError(error) {
      var limits = error.limits || {};
      var template = labels["error_" + error.code] || labels.error_choice;
      // a multimodal gemma3: what its text_config must add, as JSON to paste (vram's limits.add)
      var add = limits.add && typeof limits.add === "object" ? Object.keys(limits.add).map(function (key) {
        return JSON.stringify(key) + ": " + JSON.stringify(limits.add[key]);
      }).join(", ") : "";
      if (error.code === "config_multimodal" && !add) template = labels.error_config_no_text;
      // a look-alike model_type: each character that is not plain ASCII, with its code point (vram's limits.characters)
      var characters = Array.isArray(limits.characters) ? limits.characters.map(function (odd) {
        return fill(labels.odd_character, { character: odd[0], code_point: odd[1], name: odd[2] });
      }).join(", ") : "";
      if (error.code === "config_family" && characters) template = labels.error_config_family_odd;
      var line = fill(template, {
        field: fieldName(error.field === "config" && controls.model.value !== CUSTOM ? "model"
          : error.field === "prices" ? "price_" + limits.key : error.field),
        minimum: typeof limits.minimum === "number" ? formats.decimal.format(limits.minimum) : "",
        maximum: typeof limits.maximum === "number" ? formats.decimal.format(limits.maximum) : "",
        key: limits.key || "",
        // vram's own fields of a config.json error (vram.job.read_config), as the command line says them
        line: typeof limits.line === "number" ? formats.whole.format(limits.line) : "",
        column: typeof limits.column === "number" ? formats.whole.format(limits.column) : "",
        got: limits.got || "",
        add: add,
        characters: characters,
        choices: Array.isArray(limits.choices) ? limits.choices.join(", ") : "",
        // a price of "1.200": its two readings (vram's AmbiguousPrice), the decimal one as the page writes it
        decimal: typeof limits.decimal === "string" ? limits.decimal.replace(".", labels.decimal_symbol) : "",
        thousands: limits.thousands || ""
      });
      if (error.code === "not_offered" && labels["refused_" + error.field]) line += " " + labels["refused_" + error.field];
      var price = error.field === "prices" ? controls["price_" + limits.key] : null;
      if (price) {  // the field named is shown, even for a machine that does not fit, so it can be mended
        price.closest(".finder-price").hidden = false;
        form.querySelector(".finder-prices").hidden = false;
      }
      errorLine.textContent = line;
      errorLine.hidden = false;
      out.results.hidden = true;
    }

    function clearError() {
      errorLine.textContent = "";
      errorLine.hidden = true;
      out.results.hidden = false;
    }

    // What the reader typed: a whole number as a number, anything else as typed (the
    // calculator refuses it with the field's limits, in one line).
    function value(name) {
      var text = canonical(name, controls[name].value);
      if (INTEGERS.indexOf(name) >= 0) return /^[0-9]{1,15}$/.test(text) ? Number(text) : text;
      if (name === "gpu_memory_utilization") return /^[0-9]{0,3}(\.[0-9]{1,6})?$/.test(text) && text !== "" && text !== "." ? Number(text) : text;
      if (name === "attention") return text === "" ? null : text;
      return text;
    }

    // The RAM of each machine of this many cards: the catalogue's where the data give it,
    // else the one the reader typed (vram says whether it holds the offload).
    function hostRam(cards) {
      var machines = {};
      var typed = value("host_ram_gb");
      data.gpus.forEach(function (g) {
        var known = (data.host_ram_gb || {})[g.key + "@" + cards];
        if (known !== undefined) machines[g.key] = known;
        else if (typed !== "") machines[g.key] = typed;
      });
      return machines;
    }

    function job() {
      var current = kind();
      var task = tasks[controls.task.value];
      var found = {
        kind: current, cards: Number(controls.cards.value),
        gpus: data.gpus.map(function (g) { return { key: g.key, memory_mib: g.memory_mib, speed: g.speed }; }),
        reserve_mib: data.reserve_mib, tight_free_fraction: data.tight_free_fraction,
        calibration: data.calibration  // the published runs behind every time (vram.calibration)
      };
      var names;
      if (current === "serving") {
        found.context = value("context");
        found.weights = task.weight_dtype;
        names = ["kv_dtype", "concurrent", "gpu_memory_utilization", "max_num_batched_tokens"];
      } else {
        var method = methods[controls.method.value];
        found.framework = method.framework;
        found.zero_stage = method.zero_stage;
        names = ["seq_len", "micro_batch", "grad_accum", "recompute", "attention", "offload"];
        names = names.concat(current === "training" ? [] : ["rank", "targets"]);
        if (current === "training") {
          found.optimizer = task.optimizer;
          found.optimizer_impl = task.optimizer_impl;
        }
        found.host_ram_gb = hostRam(found.cards);
        found.tokens = value("tokens");
        // the guide's price of each machine of this many cards, or the reader's for it
        found.prices = {};
        data.gpus.forEach(function (g) {
          var machine = data.machines[g.key + "@" + found.cards];
          var typed = value("price_" + g.key);
          if (typed !== "") found.prices[g.key] = typed;
          else if (machine) found.prices[g.key] = String(machine.price_eur_per_hour_from);
        });
        if (current === "lora") found.base_dtype = task.base_dtype;
      }
      names.forEach(function (name) { found[name] = value(name); });
      return found;
    }

    function render() {
      shown += 1;
      var ticket = shown;
      updateControls();
      if (isReference()) {
        var option = kind() === "serving" ? canonical("context", controls.context.value) : controls.method.value;
        var choice = [controls.model.value, controls.task.value, controls.cards.value, option];
        clearError();
        out.results.removeAttribute("data-answer");
        if (offered(choice[0], choice[1], choice[2]).indexOf(option) < 0) {
          staticShown = false;
          out.wrap.textContent = "";
          out.status.textContent = labels.not_computed;
          out.order.hidden = true;
          out.why.textContent = "";
          out.note.textContent = "";
        } else if (!(staticShown && isDefault(choice))) {  // the page already shows the default answer
          staticShown = false;
          form.setAttribute("data-state", "computing");
          referenceAnswers().then(function (results) {
            if (ticket !== shown) return;
            show(results[choice[0]][answered(choice[1])][choice[2]][choice[3]], null);
            form.setAttribute("data-state", "ready");
          }, function (error) {
            if (ticket !== shown) return;
            out.status.textContent = labels.load_error + " (" + error.message + ")";
            form.setAttribute("data-state", "failed");
          });
          return;
        }
        form.setAttribute("data-state", "ready");
        return;
      }
      staticShown = false;
      if (controls.model.value === CUSTOM && !configBox.value.trim()) {  // nothing pasted yet
        clearError();
        out.wrap.textContent = "";
        out.status.textContent = labels.config_hint;
        out.why.textContent = "";
        out.note.textContent = "";
        form.setAttribute("data-state", "ready");
        return;
      }
      var request = job();
      var message = { job: request };
      if (controls.model.value === CUSTOM) message.configText = keptConfig(configBox.value);
      else message.model = controls.model.value;
      form.setAttribute("data-state", "computing");
      out.status.textContent = labels.computing;
      ask(message).then(function (reply) {
        if (ticket !== shown) return;
        if (reply.failure !== undefined) {
          out.status.textContent = labels.load_error;
          form.setAttribute("data-state", "failed");
          return;
        }
        var answer = JSON.parse(reply.text);
        if (answer.error) {
          showError(answer.error);
        } else {
          clearError();
          show(answer, request);
        }
        out.results.setAttribute("data-answer", reply.text);  // the calculator's own JSON text, for checks
        form.setAttribute("data-state", "ready");
      });
    }

    // The choice lives in the URL's query (?model=&task=&cards=&method= or &context=, and every
    // other input that differs from the reference job): a link reproduces the answer, and the
    // language switcher (lang-switch.js) carries it to the other language. A pasted config.json
    // stays in the page (it may be long): the link says model=custom.
    function restoreChoice() {
      var query = new URLSearchParams(location.search);
      CHOICE.forEach(function (name) {
        var value = query.get(name);
        var known = controls[name].tagName !== "SELECT"  // the context: any length, checked by the calculator
          || Array.prototype.some.call(controls[name].options, function (option) { return option.value === value; });
        if (value !== null && known) controls[name].value = value;
      });
      JOB_INPUTS.forEach(function (name) {
        var value = query.get(name);
        if (value === null) return;
        if (controls[name].tagName === "SELECT") {
          var known = Array.prototype.some.call(controls[name].options, function (option) { return option.value === value; });
          if (known) controls[name].value = value;
        } else {
          controls[name].value = localised(name, value);
        }
      });
      if (controls.model.value === CUSTOM && !configBox.value.trim()) configBox.value = keptConfig();
    }

    function saveChoice() {
      var query = new URLSearchParams(location.search);
      CHOICE.concat(JOB_INPUTS).forEach(function (name) { query.delete(name); });
      ["model", "task", "cards"].forEach(function (name) { query.set(name, controls[name].value); });
      if (kind() === "serving") query.set("context", canonical("context", controls.context.value));
      else query.set("method", controls.method.value);  // the method names the framework, on one card too
      var reference = defaults();
      JOB_INPUTS.forEach(function (name) {
        var typed = canonical(name, controls[name].value);
        if (relevant(name) && typed !== reference[name]) query.set(name, typed);
      });
      history.replaceState(history.state, "", "?" + query.toString() + location.hash);
    }

    function readFile(file) {
      if (!file) return;
      file.text().then(function (text) {
        configBox.value = text;
        controls.model.value = CUSTOM;
        render();
        saveChoice();
      });
    }

    form.addEventListener("change", function (event) {
      if (event.target === configFile) return readFile(configFile.files[0]);
      render();
      saveChoice();
    });
    var typing = null;
    form.addEventListener("input", function (event) {
      if (event.target.tagName === "SELECT" || event.target === configFile) return;
      clearTimeout(typing);
      typing = setTimeout(function () { render(); saveChoice(); }, 250);
    });
    configBox.addEventListener("dragover", function (event) { event.preventDefault(); });
    configBox.addEventListener("drop", function (event) {
      event.preventDefault();
      readFile(event.dataTransfer && event.dataTransfer.files[0]);
    });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    restoreChoice();
    render();
    if (changedBeforeStart) saveChoice();  // the link holds what the reader chose while finder.json loaded
    form.setAttribute("data-ready", "true");
  }

  function jsonURL() {
    return new URL(form.getAttribute("data-json"), document.baseURI);
  }

  // The form's data (finder.json) is fetched when the reader starts using the form, or at once when
  // the address already holds a choice; the default one is already in the page.
  var loading = null;
  function load() {
    if (loading) return loading;
    loading = fetch(jsonURL())
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + response.statusText);
        return response.json();
      })
      .then(start)
      .catch(function (error) {
        if (out.note) out.note.textContent = labels.load_error + " (" + error.message + ")";
      });
    return loading;
  }

  // A choice made before start() listens (the first keydown both loads finder.json and moves
  // the select): start() answers it, and must also write it into the address.
  var changedBeforeStart = false;
  ["change", "input"].forEach(function (type) {
    form.addEventListener(type, function () { changedBeforeStart = true; }, { once: true });
  });

  form.hidden = false;
  var query = new URLSearchParams(location.search);
  if (CHOICE.concat(JOB_INPUTS).some(function (name) { return query.has(name); })) {
    load();
  } else {
    ["focusin", "pointerdown", "keydown"].forEach(function (type) { form.addEventListener(type, load, { once: true }); });
  }
})();
