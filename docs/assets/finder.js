/* "Find the GPU your model fits in" (docs/gpu-finder.*.md).
 *
 * Every number comes from assets/finder.json, computed at build time by hooks/finder.py
 * with the guide's calculator (vram/). This script only selects the result of the chosen
 * inputs, shows or hides the controls that apply, and formats numbers for the page's
 * language with Intl.NumberFormat. It does no arithmetic on the data. It builds the same
 * structure as the static result rendered for readers without JavaScript.
 */
(function () {
  "use strict";

  var form = document.getElementById("finder-form");
  var labelsNode = document.getElementById("finder-labels");
  if (!form || !labelsNode) return;

  var labels = JSON.parse(labelsNode.textContent);
  var lang = document.documentElement.lang || "it";
  var NBSP = "\u00a0";
  // useGrouping "always": 2.048 as the rest of the site writes it (Babel), not 2048.
  var formats = {
    gb: new Intl.NumberFormat(lang, { maximumFractionDigits: 1, useGrouping: "always" }),
    whole: new Intl.NumberFormat(lang, { maximumFractionDigits: 0, useGrouping: "always" }),
    percent: new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 }),
    eur: new Intl.NumberFormat(lang, { style: "currency", currency: "EUR" })
  };
  var controls = {
    model: document.getElementById("finder-model"),
    task: document.getElementById("finder-task"),
    cards: document.getElementById("finder-cards"),
    method: document.getElementById("finder-method"),
    context: document.getElementById("finder-context")
  };
  var out = {
    status: document.getElementById("finder-status"),
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

  function start(data) {
    var models = byKey(data.models);
    var tasks = byKey(data.tasks);
    var gpus = byKey(data.gpus);

    function kind() {
      return tasks[controls.task.value].kind;
    }

    // Offer only the choices the JSON holds a result for; keep the current one if it is
    // offered, else fall back to the first (or, with preferLast, the last) one offered.
    function offer(select, available, title, preferLast) {
      var options = Array.prototype.slice.call(select.options);
      options.forEach(function (option) {
        option.disabled = !Object.prototype.hasOwnProperty.call(available, option.value);
        option.title = option.disabled && title ? title(option) : "";
      });
      if (select.selectedOptions[0].disabled) {
        var allowed = options.filter(function (option) { return !option.disabled; });
        if (allowed.length) select.value = allowed[preferLast ? allowed.length - 1 : 0].value;
      }
    }

    function updateControls() {
      var current = kind();
      form.querySelectorAll("[data-kinds]").forEach(function (field) {
        field.hidden = field.getAttribute("data-kinds").split(" ").indexOf(current) < 0;
      });
      var byTask = (data.results[controls.model.value] || {})[controls.task.value] || {};
      offer(controls.cards, byTask);
      var byCards = byTask[controls.cards.value] || {};
      var oneCard = controls.cards.value === "1";
      document.getElementById("finder-context-hint").hidden = oneCard;
      if (current === "serving") {
        var maxContext = models[controls.model.value].max_context;
        offer(controls.context, byCards, function (option) {
          return maxContext !== null && Number(option.value) > maxContext ? labels.too_long : "";
        }, true);
      } else {
        offer(controls.method, byCards);  // the framework matters on one card too
      }
    }

    function choiceText(serving) {
      var parts = [selectedText(controls.model), selectedText(controls.task),
        controls.cards.value === "1" ? labels.cards_one : fill(labels.cards_many, { cards: controls.cards.value })];
      if (serving) parts.push(selectedText(controls.context));
      else parts.push(selectedText(controls.method));
      return fill(labels.caption, { choice: parts.join(", ") });
    }

    function table(fits, cards, serving) {
      var node = element("table", null, { id: "finder-table" });
      node.appendChild(element("caption", choiceText(serving)));
      var head = element("tr");
      ["col_card", "col_memory", "col_margin", "col_price"].forEach(function (key) {
        head.appendChild(element("th", labels[key], { scope: "col" }));
      });
      node.appendChild(element("thead")).appendChild(head);
      var body = node.appendChild(element("tbody"));
      fits.forEach(function (fit) {
        var gpu = gpus[fit.gpu];
        var row = body.appendChild(element("tr"));
        row.appendChild(element("th", gpu.name, { scope: "row" }));
        row.appendChild(element("td", gb(gpu.memory_gb)));  // nvidia-smi's total, in GB
        var margin = row.appendChild(element("td", fill(labels.margin_cell, {
          margin: gb(fit.margin_gb), free: formats.percent.format(fit.free_fraction)
        })));
        if (fit.tight) {  // training and LoRA: only with full recomputation; serving: little free
          margin.appendChild(document.createTextNode(" "));
          margin.appendChild(element("strong", fit.recompute ? labels.tight_recompute : labels.tight, { "class": "finder-tight" }));
        }
        var price = fit.machine
          ? fill(labels.price_cell, { count: cards, gpu: gpu.name, price: formats.eur.format(fit.price_eur_per_hour_from) })
          : labels.no_price;
        row.appendChild(element("td", price));
      });
      return node;
    }

    function render() {
      updateControls();
      var serving = kind() === "serving";
      var option = serving ? controls.context.value : controls.method.value;
      var byCards = ((data.results[controls.model.value] || {})[controls.task.value] || {})[controls.cards.value] || {};
      var found = byCards[option];
      out.wrap.textContent = "";
      if (!found) {
        out.status.textContent = labels.not_computed;
        out.why.textContent = "";
        out.note.textContent = "";
        return;
      }
      var fits = found.fits;
      var reserve = formats.gb.format(data.reserve_gib) + NBSP + labels.unit_gib;
      // What the figure per card holds, then the verdict (as hooks/finder.py's summary_text).
      var needText = fill(serving ? labels.need_serving : labels.need_training, {
        need: gb(found.per_gpu_gb), reserve: reserve
      });
      var status;
      if (fits.length === 0) {
        status = fill(labels.summary_none, { need_text: needText });
      } else {
        status = fill(fits.length === 1 ? labels.summary_one : labels.summary_many, {
          need_text: needText, count: fits.length, gpu: gpus[fits[0].gpu].name, margin: gb(fits[0].margin_gb)
        });
        if (fits[0].recompute === "full") status += " " + labels.summary_recompute;
        out.wrap.appendChild(table(fits, controls.cards.value, serving));
      }
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
          return fill(labels.part_size, { part: labels["part_" + part[0]], size: gb(part[1]) });
        }).join(labels.part_separator)
      });
      if (serving) {
        out.note.textContent = fill(labels.activations_serving, {
          context: formats.whole.format(Number(option)), reserve: reserve
        });
      } else {
        var model = models[controls.model.value];
        out.note.textContent = fill(labels["activations_" + kind()], {
          model: model.name, seq: formats.whole.format(data.activations.seq_length),
          micro_batch: formats.whole.format(data.activations.micro_batch),
          attention: model.activation_gb.attention,
          none: gb(model.activation_gb.none), full: gb(model.activation_gb.full), reserve: reserve
        });
      }
    }

    // The choice lives in the URL's query (?model=&task=&cards=&method= or &context=): a
    // link reproduces the answer, and the language switcher (lang-switch.js) carries it to
    // the other language, which shows the same numbers in its own format.
    function restoreChoice() {
      var query = new URLSearchParams(location.search);
      Object.keys(controls).forEach(function (name) {
        var value = query.get(name);
        var known = Array.prototype.some.call(controls[name].options, function (option) { return option.value === value; });
        if (value !== null && known) controls[name].value = value;
      });
    }

    function saveChoice() {
      var query = new URLSearchParams(location.search);
      Object.keys(controls).forEach(function (name) { query.delete(name); });
      ["model", "task", "cards"].forEach(function (name) { query.set(name, controls[name].value); });
      if (kind() === "serving") query.set("context", controls.context.value);
      else query.set("method", controls.method.value);  // the method names the framework, on one card too
      history.replaceState(history.state, "", "?" + query.toString() + location.hash);
    }

    form.addEventListener("change", function () { render(); saveChoice(); });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.hidden = false;
    restoreChoice();
    render();
    form.setAttribute("data-ready", "true");
  }

  fetch(new URL(form.getAttribute("data-json"), document.baseURI))
    .then(function (response) {
      if (!response.ok) throw new Error(response.status + " " + response.statusText);
      return response.json();
    })
    .then(start)
    .catch(function (error) {
      if (out.note) out.note.textContent = labels.load_error + " (" + error.message + ")";
    });
})();
