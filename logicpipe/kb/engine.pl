% logicpipe kb engine: loads a trusted knowledge base into module `kb` and proves goals with a
% meta-interpreter that records goal trees. One request per stdin line (JSON), one reply per
% stdout line prefixed with "@@reply " (KB code may print too; Python skips other lines).
%
% Goals arrive as canonical text that Python generated from a parsed and whitelisted AST, so the
% reader here only sees terms Python has already checked.

:- use_module(library(http/json)).
:- use_module(library(time)).
:- use_module(library(lists)).
:- use_module(library(solution_sequences)).

:- dynamic load_message/4, display_name/2, kb_pred/2, percept_pred/2, depth_hit/0.
:- dynamic loading/0.
:- discontiguous handle/3.

:- multifile user:message_hook/3.
% While loading, errors and warnings are collected (with file:line) instead of printed.
user:message_hook(Term, Kind, Lines) :-
    loading,
    memberchk(Kind, [error, warning]),
    message_location(Term, File, Line),
    catch(with_output_to(string(Text), print_message_lines(current_output, '', Lines)), _, Text = "?"),
    assertz(load_message(Kind, File, Line, Text)).

message_location(error(_, file(File, Line, _, _)), File, Line) :- !.
message_location(_, File, Line) :- source_location(File, Line), !.
message_location(_, '', 0).

main :-
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    repeat,
    read_line_to_string(user_input, Line),
    (   Line == end_of_file
    ->  halt(0)
    ;   catch(( atom_json_dict(Line, Request, [value_string_as(string)]),
                ( handle(Request.op, Request, Reply) -> true ; Reply = _{error: "the request failed"} ) ),
              Error, error_reply(Error, Reply)),
        reply(Reply),
        fail
    ).

reply(Reply) :-
    with_output_to(string(Text), json_write_dict(current_output, Reply, [width(0)])),
    format(user_output, "~n@@reply ~s~n", [Text]),   % own line, even after KB output without one
    flush_output(user_output).

error_reply(Error, _{error: Text}) :-
    message_text(Error, Text).

message_text(Error, Text) :-
    catch(message_to_codes(Error, Codes), _, fail), !,
    string_codes(Text, Codes).
message_text(Error, Text) :-
    format(string(Text), "~q", [Error]).

message_to_codes(Error, Codes) :-
    '$messages':translate_message(Error, Lines, []),
    with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)).

% --- loading --------------------------------------------------------------------------------

handle("load", Request, _{ok: true, messages: Messages, predicates: Preds}) :-
    forall(member(F, Request.files),
           ( atom_string(Path, F.path), atom_string(Name, F.name), assertz(display_name(Path, Name)) )),
    assertz(loading),
    forall(member(F, Request.files),
           ( atom_string(Path, F.path),
             catch(load_files(kb:Path, [if(true)]), E, (print_message(error, E))) )),
    retractall(loading),
    forall(( current_predicate(kb:N/A), functor(H, N, A),
             \+ predicate_property(kb:H, imported_from(_)) ),
           assertz(kb_pred(N, A))),
    findall(M, load_message_dict(M), Messages),
    findall(P, predicate_dict(P), Preds).

load_message_dict(_{kind: Kind, file: Name, line: Line, message: Text}) :-
    load_message(Kind, File, Line, Text0),
    shown_file(File, Name),
    split_string(Text0, "", "\n ", [Text]).

shown_file(File, Name) :- display_name(File, Name), !.
shown_file(File, File).

predicate_dict(_{name: N, arity: A, clauses: C, file: File, dynamic: Dyn, last_line: Last}) :-
    kb_pred(N, A),
    functor(H, N, A),
    ( predicate_property(kb:H, number_of_clauses(C)) -> true ; C = 0 ),
    ( predicate_property(kb:H, file(F)) -> shown_file(F, File) ; File = "" ),
    ( predicate_property(kb:H, dynamic) -> Dyn = true ; Dyn = false ),
    ( aggregate_all(max(L), (clause(kb:H, _, R), clause_property(R, line_count(L))), Last) -> true
    ; Last = 0 ).

handle("facts", Request, _{facts: Facts}) :-
    Max = Request.per_predicate,
    findall(S, ( kb_pred(N, A), A > 0, functor(H, N, A),
                 limit(Max, clause(kb:H, true)),
                 numbervars(H, 0, _), text(H, S) ),
            Facts).

% --- proving --------------------------------------------------------------------------------

handle("prove", Request, Reply) :-
    set_percepts(Request.percepts),
    term_string(Goal, Request.goal, [variable_names(Names)]),
    Depth = Request.depth,
    retractall(depth_hit),
    bounded(Request, findall(S, ( limit(Request.max_solutions, body(Goal, Depth, [], Nodes)),
                                  snapshot(Goal, Names, Nodes, S) ), Solutions), Outcome),
    (   Outcome \== ok
    ->  limit_reply(Outcome, Reply)
    ;   ( depth_hit -> Limit = "depth" ; Limit = null ),
        (   Solutions == []
        ->  % The failed search gets its own budget, so a tree too large to show loses only the tree.
            bounded(Request, explored(Goal, Names, Depth, Explored), Shown),
            ( Shown == ok -> true ; Explored = null ),
            Reply = _{proved: false, solutions: [], explored: Explored, limit: Limit}
        ;   Reply = _{proved: true, solutions: Solutions, explored: null, limit: Limit}
        )
    ).

% bounded(+Request, :Goal, -Outcome): run Goal once under the request's time and inference limits.
bounded(Request, Goal, Outcome) :-
    (   catch(call_with_time_limit(Request.time,
                  call_with_inference_limit(Goal, Request.inferences, Status)),
              Error, true)
    ->  true
    ;   Error = failed
    ),
    (   nonvar(Error) -> Outcome = Error
    ;   Status == inference_limit_exceeded -> Outcome = inference_limit_exceeded
    ;   Outcome = ok
    ).

explored(Goal, Names, Depth, Explored) :-
    explore_body(Goal, Depth, [], Nodes, _),
    root(Goal, Nodes, false, Root),
    export_tree(Names, Root, Explored, _).

limit_reply(inference_limit_exceeded, _{proved: false, solutions: [], limit: "inferences",
                                        error: "inference limit exceeded"}) :- !.
limit_reply(time_limit_exceeded, _{proved: false, solutions: [], limit: "time", error: "time limit exceeded"}) :- !.
limit_reply(error(resource_error(_), _), _{proved: false, solutions: [], limit: "memory",
                                           error: "memory (stack) limit exceeded"}) :- !.
limit_reply(Error, _{proved: false, solutions: [], limit: null, error: Text}) :-
    message_text(Error, Text).

set_percepts(Percepts) :-
    forall(retract(percept_pred(N, A)), ( functor(H, N, A), retractall(kb:H) )),
    forall(member(P, Percepts), set_percept(P)).

set_percept(P) :-
    atom_string(Name, P.name),
    term_string(Value, P.value),
    (   kb_pred(Name, 1), functor(H, Name, 1), \+ predicate_property(kb:H, dynamic)
    ->  format(string(Msg), "percept ~w/1 is defined statically in the KB; declare it with :- dynamic ~w/1.",
               [Name, Name]),
        throw(error(format(Msg), _))
    ;   true
    ),
    dynamic(kb:Name/1),
    functor(Head, Name, 1),
    retractall(kb:Head),
    Fact =.. [Name, Value],
    assertz(kb:Fact),
    assertz(percept_pred(Name, 1)).

% A single goal is its own root; a conjunction gets a "query" node over its conjuncts.
root(Goal, [Node], _, Node) :- Goal \= (_, _), !.
root(Goal, Nodes, Proved, node(Goal, query, Nodes, Proved)).

snapshot(Goal, Names, Nodes, _{bindings: Bindings, tree: Tree}) :-
    root(Goal, Nodes, true, Root),
    export_tree(Names, Root, Tree, Bindings).

% export_tree(+Names, +Root, -Tree, -Bindings): copy, name the query's variables by their written
% names and the rest _A, _B, ..., then render the tree and the named variables' values.
export_tree(Names, Root, Tree, Bindings) :-
    copy_term(Names-Root, Names2-Root2),
    forall(member(N=V, Names2), ( var(V) -> V = '$VAR'(N) ; true )),
    numbervars(Root2, 0, _, [singletons(false)]),
    node_dict(Root2, Tree),
    findall(N-S, ( member(N=V, Names2), \+ sub_atom(N, 0, _, _, '_'), text(V, S) ), Pairs),
    dict_pairs(Bindings, _, Pairs).

node_dict(node(G, Label, Children, Proved), _{goal: S, clause: L, children: Cs, proved: Proved}) :-
    text(G, S),
    label_text(Label, L),
    maplist(node_dict, Children, Cs).

label_text(Label, Text) :- string(Label), !, Text = Label.
label_text(Label, Text) :- format(string(Text), "~w", [Label]).

text(T, S) :- format(string(S), "~W", [T, [quoted(true), numbervars(true), spacing(next_argument)]]).

defined(G) :- functor(G, N, A), kb_pred(N, A), !.
defined(G) :- functor(G, N, A), percept_pred(N, A).

clause_label(Ref, Label) :-
    clause_property(Ref, file(F)), clause_property(Ref, line_count(L)), !,
    shown_file(F, Name),
    format(string(Label), "~w:~w", [Name, L]).
clause_label(Ref, "percept") :-
    clause(H, _, Ref), strip_module(H, _, P), functor(P, N, A), percept_pred(N, A), !.
clause_label(_, "asserted").

builtin_label(G, Label) :- functor(G, N, A), format(string(Label), "~w/~w", [N, A]).

% body(+Goal, +DepthLeft, +Ancestors, -Nodes): prove Goal, the nodes of its conjuncts in order.
body(G, _, _, _) :- var(G), !, throw(error(instantiation_error, goal)).
body(true, _, _, []) :- !.
body((A, B), D, Anc, Nodes) :- !,
    body(A, D, Anc, N1), body(B, D, Anc, N2), append(N1, N2, Nodes).
body((C -> T ; E), D, Anc, Nodes) :- !,
    (   body(C, D, Anc, N1) -> body(T, D, Anc, N2), append(N1, N2, Nodes)
    ;   body(E, D, Anc, Nodes) ).
body((A ; B), D, Anc, Nodes) :- !,
    ( body(A, D, Anc, Nodes) ; body(B, D, Anc, Nodes) ).
body((C -> T), D, Anc, Nodes) :- !,
    body(C, D, Anc, N1), !, body(T, D, Anc, N2), append(N1, N2, Nodes).
body(\+ G, D, Anc, [node(\+ G, "negation as failure", [], true)]) :- !,
    \+ body(G, D, Anc, _).
body(not(G), D, Anc, Nodes) :- !, body(\+ G, D, Anc, Nodes).
body(once(G), D, Anc, Nodes) :- !, once(body(G, D, Anc, Nodes)).
body(ignore(G), D, Anc, Nodes) :- !, ( body(G, D, Anc, Nodes) -> true ; Nodes = [] ).
body(findall(T, G, L), D, Anc, [node(findall(T, G, L), "findall/3", [], true)]) :- !,
    findall(T, body(G, D, Anc, _), L).
body(forall(C, A), D, Anc, [node(forall(C, A), "forall/2", [], true)]) :- !,
    \+ ( body(C, D, Anc, _), \+ body(A, D, Anc, _) ).
body(aggregate_all(Spec, G, R), D, Anc, [node(aggregate_all(Spec, G, R), "aggregate_all/3", [], true)]) :- !,
    aggregate_all(Spec, body(G, D, Anc, _), R).
body(G, D, Anc, [Node]) :- goal(G, D, Anc, Node).

goal(G, D, Anc, node(G, Label, Children, true)) :-
    defined(G), !,
    \+ ( member(A, Anc), A =@= G ),          % loop check: a variant of an open goal fails
    (   D =< 0 -> assert_depth_hit, fail ; true ),
    D1 is D - 1,
    clause(kb:G, Body, Ref),
    clause_label(Ref, Label),
    body(Body, D1, [G|Anc], Children).
goal(G, _, _, node(G, Label, [], true)) :-
    builtin_label(G, Label),
    call(kb:G).

assert_depth_hit :- ( depth_hit -> true ; assertz(depth_hit) ).

% explore_body(+Goal, +D, +Anc, -Nodes, -Proved): after a failed proof, the tree that was tried.
% Conjunctions stop at the first failing conjunct; a succeeding conjunct keeps its first solution.
explore_body((A, B), D, Anc, Nodes, Proved) :- !,
    explore_body(A, D, Anc, N1, P1),
    (   P1 == true -> explore_body(B, D, Anc, N2, Proved), append(N1, N2, Nodes)
    ;   Nodes = N1, Proved = false ).
explore_body((C -> T ; E), D, Anc, Nodes, Proved) :- !,
    (   body(C, D, Anc, N1) -> explore_body(T, D, Anc, N2, Proved), append(N1, N2, Nodes)
    ;   explore_body(C, D, Anc, N1, _), explore_body(E, D, Anc, N2, Proved), append(N1, N2, Nodes) ).
explore_body((A ; B), D, Anc, Nodes, Proved) :- !,
    explore_body(A, D, Anc, N1, P1),
    (   P1 == true -> Nodes = N1, Proved = true
    ;   explore_body(B, D, Anc, N2, Proved), append(N1, N2, Nodes) ).
explore_body(\+ G, D, Anc, [Node], Proved) :- !,
    (   body(G, D, Anc, Inner)
    ->  Node = node(\+ G, "negation as failure: the negated goal holds", Inner, false), Proved = false
    ;   Node = node(\+ G, "negation as failure", [], true), Proved = true ).
explore_body(G, D, Anc, [Node], Proved) :-
    defined(G), !,
    explore_goal(G, D, Anc, Node, Proved).
explore_body(G, D, Anc, Nodes, Proved) :-
    (   body(G, D, Anc, Nodes) -> Proved = true
    ;   builtin_label(G, Label), Nodes = [node(G, Label, [], false)], Proved = false ).

explore_goal(G, D, Anc, Node, true) :-
    goal(G, D, Anc, Node), !.
explore_goal(G, _, Anc, node(G, "loop check: a variant of an open goal", [], false), false) :-
    member(A, Anc), A =@= G, !.
explore_goal(G, D, _, node(G, "depth limit", [], false), false) :-
    D =< 0, !.
explore_goal(G, D, Anc, Node, false) :-
    D1 is D - 1,
    findall(node(G, CL, Ns, false),
            ( clause(kb:G, Body, Ref), clause_label(Ref, CL), explore_body(Body, D1, [G|Anc], Ns, _) ),
            Attempts),
    (   Attempts = [Node] -> true                         % one clause tried: show it, not a wrapper
    ;   Attempts == [] -> Node = node(G, "no matching clause", [], false)
    ;   Node = node(G, "no clause succeeded", Attempts, false) ).
