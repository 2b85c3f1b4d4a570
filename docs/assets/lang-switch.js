/*
 * Language switcher: land on the same section, not only on the same page.
 *
 * Headings keep the same id in every language ({ #id } in the Markdown), so the
 * switcher links (a.md-select__link[hreflang]) carry the current location.hash (which
 * Material's navigation.tracking keeps on the section being read, with replaceState:
 * no hashchange event) and the query (the finder's choices, finder.js): kept in sync on
 * load and on every hash change, and set again on click.
 *
 * Also: Material fetches "<href>/sitemap.xml" for every <link rel="alternate">
 * once the DOM is ready, to map pages between language *sites*. static-i18n's
 * alternates are per page (right for search engines, and the switcher already
 * points to the page in the other language), so each fetch is a 404. The
 * alternates are hidden from that one DOMContentLoaded handler and put back
 * right after it; the HTML is unchanged.
 */
(function () {
  "use strict";

  var SWITCH = "a.md-select__link[hreflang]";

  function withHash(link) {
    var bare = link.href.split("#")[0].split("?")[0];
    link.href = bare + location.search + location.hash;
  }

  function syncAll() {
    Array.prototype.forEach.call(document.querySelectorAll(SWITCH), withHash);
  }

  document.addEventListener("click", function (event) {
    var link = event.target instanceof Element ? event.target.closest(SWITCH) : null;
    if (link) withHash(link);
  }, true);
  window.addEventListener("hashchange", syncAll);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", syncAll);
  else syncAll();

  /* Capture on window runs before Material's listener on document; this
     script's own listener on document runs after it (registration order). */
  var hidden = [];
  window.addEventListener("DOMContentLoaded", function () {
    hidden = Array.prototype.slice.call(document.querySelectorAll('link[rel="alternate"][hreflang]'));
    hidden.forEach(function (el) { el.setAttribute("rel", "x-alternate"); });
  }, { capture: true, once: true });
  document.addEventListener("DOMContentLoaded", function () {
    hidden.forEach(function (el) { el.setAttribute("rel", "alternate"); });
  }, { once: true });
})();
