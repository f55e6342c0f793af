// uPlot publishes no minified ES module: index.html loads its minified IIFE build
// (uPlot.iife.min.js, which sets the global ``uPlot``) before any module runs, and this shim is
// what ``import uPlot from "uplot"`` resolves to.
export default globalThis.uPlot;
