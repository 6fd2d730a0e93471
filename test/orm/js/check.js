// Shared by the JavaScript tests of test/orm/run.sh: ok/not ok lines, where
// the server is (run.sh sets PGHOST to the socket's directory, PGPORT, PGUSER
// and PGDATABASE), and the retry that makes a key a double cannot hold.
'use strict';

let failed = 0;

function check(cond, name) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${name}`);
  if (!cond) failed++;
}

function done() {
  process.exitCode = failed ? 1 : 0;
}

const server = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  user: process.env.PGUSER,
  database: process.env.PGDATABASE,
};

// a key (string or bigint) that a JavaScript Number cannot hold
const notANumber = (key) => BigInt(Number(key)) !== BigInt(key);

// insert(note) -> key, retried until the key is one a double cannot hold.
// A quiet server's key is the first ID of its millisecond, which on node 1
// ends in 12 zero bits and survives a Number unchanged; the table's statement
// trigger (snowid_orm_busy, made by run.sh) draws IDs just before the key's
// default, as concurrent inserts would, so that the key has sequence bits set
// and a client rounding through a Number would show.  A key that is first of
// its millisecond all the same is retried.
async function beyondDouble(name, insert) {
  let got;
  let note;
  for (let tries = 1; tries <= 200; tries++) {
    note = `${name}.${tries}`;
    got = await insert(note);
    if (notANumber(got)) return { got, note, tries };
  }
  return { got, note, tries: 'none of 200' };
}

module.exports = { check, done, server, notANumber, beyondDouble };
