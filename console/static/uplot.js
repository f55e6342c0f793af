// Ours, not vendored: uPlot publishes no minified ES module, so index.html loads its minified
// IIFE build (vendor/uPlot.iife.min.js, which sets the global ``uPlot``) before any module runs,
// and this module is what ``import uPlot from "uplot"`` resolves to.
export default globalThis.uPlot;
