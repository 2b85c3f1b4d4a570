/*
 * Material's search worker, with accents folded: "memoire" finds what "mémoire" finds,
 * "entrainement" what "entraînement" finds, in both languages.
 *
 * Why: Material's search (lunr) has no option for it (its pipeline options are stemmer,
 * stopWordFilter and trimmer). How: overrides/main.html points __config.search here, with
 * Material's own worker file in ?material=; this script loads that worker unchanged, then
 *   - adds one step to the index's pipelines, so every indexed word is folded
 *     (NFD, combining marks removed: "mémoire" is indexed as "memoire"), and
 *   - folds each query before Material's worker sees it (Material adds a trailing
 *     wildcard to every term, and lunr runs no pipeline on wildcard terms).
 * Results and highlights still show the page's text with its accents (positions come
 * from the original text). It can go when Material's search folds accents itself.
 */
(function () {
  "use strict";

  var QUERY = 2; // Material's SearchMessageType.QUERY
  var name = new URL(self.location.href).searchParams.get("material") || "";
  if (!/^search\.[0-9a-f]+\.min\.js$/.test(name)) throw new Error("search-fold.js: no Material worker given");

  function fold(text) {
    return text.normalize("NFD").replace(/[\u0300-\u036f]/g, "");
  }

  // Material's worker registers its message listener with the global addEventListener.
  var listen = self.addEventListener;
  self.addEventListener = function (type, listener, options) {
    if (type !== "message") return listen.call(self, type, listener, options);
    return listen.call(self, type, function (event) {
      var message = event.data;
      if (message && message.type === QUERY && typeof message.data === "string")
        message = { type: QUERY, data: fold(message.data) };
      return listener({ data: message });
    }, options);
  };

  importScripts(name);

  var lunr = self.lunr;
  function foldToken(token) {
    return token.update(fold);
  }
  lunr.Pipeline.registerFunction(foldToken, "foldAccents");
  // lunr runs the pipeline as each document is added: fold from the first one on, after
  // Material has set the language's pipeline up.
  var add = lunr.Builder.prototype.add;
  lunr.Builder.prototype.add = function () {
    if (!this.foldsAccents) {
      this.pipeline.add(foldToken);
      this.searchPipeline.add(foldToken);
      this.foldsAccents = true;
    }
    return add.apply(this, arguments);
  };
})();
