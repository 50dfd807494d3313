SELEC 1;
\set x random(1,
