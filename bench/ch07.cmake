# Chapter 7 — streams, events, graphs, the overlap lab and the serving pipeline.
lab_bench(ch07 ch07_streams.cpp)
