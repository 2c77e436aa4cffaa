// Draws each chart as its <script> runs; when all are drawn, <body data-charts="rendered"> says so.
window.maximusCharts = [];
function maximusPlot(id, figure) {
  var config = {displaylogo: false, responsive: true};
  window.maximusCharts.push(Plotly.newPlot(id, figure.data, figure.layout, config));
}
window.addEventListener("load", function () {
  Promise.all(window.maximusCharts).then(function () {
    document.body.dataset.charts = "rendered";
  }, function (error) {
    document.body.dataset.charts = "failed";
    console.error("Maximus report: a chart failed to render", error);
  });
});
