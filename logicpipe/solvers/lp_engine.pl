% Forward chaining to a fixpoint over Logic-LM logic programs, recording one derivation per fact.
% Programs are Datalog (no function symbols), so the set of facts is finite and saturation ends even
% for cyclic rule sets. The caller's wall-clock limit guards against combinatorial blow-up; no
% library(time) alarm here, since its helper thread can make halt/0 hang.
% The program file defines fact(Source, Atom) and rule(Source, Head, Body) with atoms a(P, Args, V).
:- dynamic known/4.       % known(N, Atom, Source, PremiseNumbers)
:- dynamic counter/1.
counter(0).

add(Atom, Source, Premises) :-
    (   known(_, Old, _, _), subsumes_term(Old, Atom)
    ->  true
    ;   retract(counter(N)), N1 is N + 1, assertz(counter(N1)),
        assertz(known(N1, Atom, Source, Premises))
    ).

holds_all([], []).
holds_all([A|As], [N|Ns]) :- known(N, A, _, _), holds_all(As, Ns).

rounds :-
    findall(H-Id-Ns, (rule(Id, H, Body), holds_all(Body, Ns), \+ (known(_, K, _, _), subsumes_term(K, H))), New),
    (   New == []
    ->  true
    ;   forall(member(H-Id-Ns, New), add(H, Id, Ns)),
        rounds
    ).

saturate :-
    forall(fact(Id, A), add(A, Id, [])),
    rounds.

show :-
    forall(known(N, a(P, Args, V), Source, Premises),
           ( numbervars(Args, 0, _),
             atomic_list_concat(Premises, ',', PremiseText),
             format("~w\t~w\t~w\t~w\t~w\t~w~n", [N, P, Args, V, Source, PremiseText]) )).

main :-
    saturate,
    show,
    format("END~n"),
    flush_output,
    halt(0).
