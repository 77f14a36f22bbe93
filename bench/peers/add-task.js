'use strict';
// The tiny task of the dispatch benchmark for Piscina and Tinypool: run({ a, b }) → a + b.
module.exports = ({ a, b }) => a + b;
