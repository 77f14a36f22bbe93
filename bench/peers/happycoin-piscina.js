'use strict';
// The task of the book's happycoin-piscina.js: mine `draws` numbers, return the coins found.
const { mine } = require('./happycoin');

module.exports = ({ draws }) => {
  const coins = mine(draws);
  return { total: coins.length, coins };
};
