// The root 404.html answers every missing path (GitHub Pages): a reader under another
// language's root goes to that language's 404 page. Data: #guide-404-homes (overrides/404.html).
(function () {
  var data = JSON.parse(document.getElementById("guide-404-homes").textContent);
  var best = null;
  data.homes.forEach(function (home) {
    if (location.pathname.indexOf(home.link) === 0 && (!best || home.link.length > best.link.length)) best = home;
  });
  if (best && best.lang !== data.here && location.pathname !== best.link + "404.html")
    location.replace(best.link + "404.html");
})();
