/* report.html's one script: the filters of the examples tables. Each form.filters names its table
   (data-for); a row is shown when it has every value its selects ask for (data-<key> attributes).
   Inline, no network: the page's Content-Security-Policy lets only this script run. */
(function () {
  "use strict";
  function apply(form) {
    var table = document.getElementById(form.getAttribute("data-for"));
    if (!table) { return; }
    var selects = form.querySelectorAll("select");
    var rows = table.tBodies[0].rows;
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var keep = true;
      for (var k = 0; k < selects.length; k++) {
        var wanted = selects[k].value;
        if (wanted && rows[i].getAttribute("data-" + selects[k].getAttribute("data-key")) !== wanted) { keep = false; }
      }
      rows[i].hidden = !keep;
      if (keep) { shown++; }
    }
    form.querySelector("output").textContent = shown + " of " + rows.length + " shown";
  }
  var forms = document.querySelectorAll("form.filters");
  for (var f = 0; f < forms.length; f++) {
    (function (form) {
      form.addEventListener("change", function () { apply(form); });
      form.addEventListener("submit", function (event) { event.preventDefault(); });
      apply(form);
    })(forms[f]);
  }
})();
