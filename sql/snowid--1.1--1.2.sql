/* snowid--1.1--1.2.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.2'" to load this file. \quit
