% logicpipe kb engine: loads a trusted knowledge base into module `kb`, lets SWI-Prolog find a goal's
% answers natively (cut, if-then-else, negation, aggregates, exceptions and tabling all behave as in
% plain SWI-Prolog), then explains each answer afterwards with a bounded meta-interpreter guided by
% native calls. One request per stdin line (JSON), one reply per stdout line prefixed with "@@reply "
% and the secret Python sent first (KB code may print too; Python skips other lines).
%
% Sandbox (guard.pl): the KB's own code is trusted, but every place where it calls a term it did not
% write is rewritten at load time into a wrapper that checks the term when it runs, by a whitelist and
% by library(sandbox); a goal from Python is checked the same way, and limits cannot be caught.

:- use_module(library(http/json)).
:- use_module(library(time)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(aggregate)).
:- use_module(library(solution_sequences)).
:- ensure_loaded(guard).
:- ensure_loaded(hooks).
:- ensure_loaded(locate).

:- dynamic load_message/4, display_name/2, kb_pred/2, percept_pred/2, allowed_builtin/2, loading/0,
           auto_tabled/2, loaded_pred/3, saved_flag/2, kb_mod/1,
           saved_global/2.
:- discontiguous handle/3.

:- multifile user:message_hook/3.
% While loading, errors and warnings are collected (with file:line) instead of printed.
user:message_hook(Term, Kind, Lines) :-
    loading,
    memberchk(Kind, [error, warning]),
    message_location(Term, File, Line),
    catch(with_output_to(string(Text), print_message_lines(current_output, '', Lines)), _, Text = "?"),
    assertz(load_message(Kind, File, Line, Text)).


% Replies go to the process's standard output, marked with a secret Python sends as the first line of
% input; both are held only by this loop's own variables. Everything else that writes to user_output
% (KB code printing what a goal hands it) goes to standard error from the start, so no line a goal has
% printed can pass for a reply.
main :-
    set_stream(user_input, encoding(utf8)),
    stream_property(Out, alias(user_output)),
    set_stream(Out, encoding(utf8)),
    read_line_to_string(user_input, Secret),
    set_stream(user_error, alias(user_output)),
    set_output(user_error),
    repeat,
    read_line_to_string(user_input, Line),
    (   Line == end_of_file
    ->  halt(0)
    ;   catch(atom_json_dict(Line, Request, [value_string_as(string)]), Unreadable, true),
        % Each reply names the request it answers (Python's nonce): a reply written for another one is
        % seen, and the engine is no longer trusted.
        (   var(Unreadable), get_dict(nonce, Request, Nonce), string(Nonce) -> true ; Nonce = "-" ),
        (   nonvar(Unreadable)
        ->  error_reply(Unreadable, Reply)
        ;   catch(( handle(Request.op, Request, Reply) -> true ; Reply = _{error: "the request failed"} ),
                  Error, error_reply(Error, Reply))
        ),
        catch(reply(Out, Secret, Nonce, Reply), Unwritable, true),
        (   var(Unwritable) -> true
        ;   message_text(Unwritable, Why),          % this request's reply only: the engine goes on
            format(string(Text), "the engine could not write its reply: ~s", [Why]),
            reply(Out, Secret, Nonce, _{error: Text})
        ),
        fail
    ).

reply(Out, Secret, Nonce, Reply) :-
    with_output_to(string(Text), json_write_dict(current_output, Reply, [width(0)])),
    format(Out, "@@reply ~s ~s ~s~n", [Secret, Nonce, Text]),
    flush_output(Out).

error_reply(Error, _{error: Text}) :-
    message_text(Error, Text).

message_text(refused(whitelist, N/A), Text) :- atom(N), integer(A), !,
    format(string(Text), "refused by the whitelist: ~w/~w is neither a predicate of the KB nor an allowed pure builtin",
           [N, A]).
message_text(refused(whitelist, What), Text) :- !,
    format(string(Text), "refused by the whitelist: ~W may not run here", [What, [quoted(true), max_depth(8)]]).
message_text(refused(sandbox, error(instantiation_error, _)), Text) :- !,
    Text = "refused by library(sandbox): it cannot tell what a goal held in a variable will call".
message_text(refused(sandbox, Error), Text) :- !,
    error_text(Error, Text0),
    split_string(Text0, "\n", " ", [First|_]),
    format(string(Text), "refused by library(sandbox): ~s", [First]).
message_text(Error, Text) :-
    error_text(Error, Text).

% error_text(+Error, -Text): an exception as text. A goal may have built it (throw/1 through a KB rule),
% and SWI-Prolog's message translation runs format's ~@ in a term such as format(F, A) or
% error(format(F, A), _): only the standard error kinds are translated, without their context (which
% may hold such a term too); anything else is written, never translated.
error_text(error(Formal, Context0), Text) :-
    standard_error(Formal),
    plain_context(Context0, Context),
    catch(message_to_codes(error(Formal, Context), Codes), _, fail), !,
    string_codes(Text0, Codes),
    split_string(Text0, "", "\n ", [Text]).
error_text(Error, Text) :-
    format(string(Text), "~W", [Error, [quoted(true), max_depth(10), portray(false)]]).

% The predicate that raised it, kept where it is a plain name/arity and the message plain text.
plain_context(Context, context(Name/Arity, Message)) :-
    nonvar(Context), Context = context(Name/Arity, Message),
    atom(Name), integer(Arity), \+ sub_atom(Name, 0, _, _, '$'), ( var(Message) ; atomic(Message) ), !.
plain_context(Context, context(M:Name/Arity, Message)) :-
    nonvar(Context), Context = context(M:Name/Arity, Message),
    atom(M), atom(Name), integer(Arity), \+ sub_atom(Name, 0, _, _, '$'), ( var(Message) ; atomic(Message) ), !.
plain_context(_, _).

standard_error(Formal) :- var(Formal), !, fail.
standard_error(instantiation_error).
standard_error(uninstantiation_error(_)).
standard_error(type_error(_, _)).
standard_error(domain_error(_, _)).
standard_error(existence_error(_, _)).
standard_error(existence_error(_, _, _)).
standard_error(permission_error(_, _, _)).
standard_error(representation_error(_)).
standard_error(evaluation_error(_)).
standard_error(resource_error(_)).
standard_error(syntax_error(_)).

message_to_codes(Error, Codes) :-
    '$messages':translate_message(Error, Lines, []),
    with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)).

% --- loading --------------------------------------------------------------------------------

handle("load", Request, _{ok: true, messages: Messages, predicates: Preds, tabled: Tabled, operators: Ops,
                          allowed: Allowed, effects: Effects}) :-
    forall(member([N, A], Request.builtins), ( atom_string(Name, N), assertz(allowed_builtin(Name, A)) )),
    findall(Name/A, ( member([N, A], Request.allow), atom_string(Name, N) ), Allow),
    allow_effects(Allow, Allowed0),
    findall([N, A], member(N/A, Allowed0), Allowed),
    forall(member(F, Request.files),
           ( atom_string(Path, F.path), atom_string(Name, F.name), assertz(display_name(Path, Name)) )),
    forall(sandbox_widening(Ref), assertz(sandbox_before(Ref))),   % guard.pl widened/2
    assertz(loading),
    forall(member(F, Request.files), catch(load_kb_file(F), E, print_message(error, E))),
    retractall(loading),
    forall(own_predicate(N, A), assertz(kb_pred(N, A))),
    sandbox_asserted,
    derive_option_calls,                      % the KB may have loaded a library that declares more options
    table_left_recursion,
    table_recursive_callers,
    findall(M, load_message_dict(M), Messages),
    findall(P, predicate_dict(P), Preds),
    findall(S, ( auto_tabled(N, A), format(string(S), "~w/~w", [N, A]) ), Tabled),
    findall([P, T, S], kb_operator(P, T, S), Ops),
    findall(E, effect_dict(E), Effects),
    forall(loaded_flag(F, V), assertz(saved_flag(F, V))),   % what each goal's flags are set back to
    forall(( sandbox:safe_global_variable(G), atom(G) ),
           ( nb_current(G, V) -> assertz(saved_global(G, V)) ; assertz(saved_global(G, '$unset')) )),
    forall(kb_module(M), ( assertz(kb_mod(M)), forall(current_predicate(M:N/A), assertz(loaded_pred(M, N, A))) )).

% KB predicates whose own rules (as rewritten) reach a builtin library(sandbox) refuses: a goal may
% call them only when the command allowed that builtin (--allow). kb check reports them.
effect_dict(_{predicate: Text, calls: Calls}) :-
    kb_pred(N, A), functor(H, N, A),
    \+ predicate_property(kb:H, number_of_rules(0)),
    catch(sandbox_check(H), refused(sandbox, Error), true),
    nonvar(Error), Error = error(permission_error(call, sandboxed, What), _),
    format(string(Text), "~q/~w", [N, A]),
    strip_module(What, _, Called), functor(Called, CN, CA), format(string(Calls), "~q/~w", [CN, CA]).

% load_kb_file(+File): from source, or through the compiled cache Python keeps by content hash: a
% copy of the source (`source`, so clauses keep its lines) compiled to `qlf` once, then loaded from it.
load_kb_file(F) :-
    atom_string(Path, F.path),
    (   get_dict(qlf, F, QlfString), QlfString \== null
    ->  atom_string(Source, F.source), atom_string(Qlf, QlfString), atom_string(Name, F.name),
        assertz(display_name(Source, Name)),
        (   F.compile == true -> qcompile(kb:Source) ; load_files(kb:Qlf, []) )
    ;   load_files(kb:Path, [if(true)])
    ).

% The KB's own predicates, also those of a KB written as a module (imported into kb from its file);
% tabling internals ('$tabled'/2, '$wrap$p'/N) and library predicates are not the KB's.
own_predicate(N, A) :-
    current_predicate(kb:N/A),
    \+ sub_atom(N, 0, _, _, '$'),
    \+ sub_atom(N, 0, _, _, '__aux_'),        % library(yall)'s and others' helper predicates
    functor(H, N, A),
    (   predicate_property(kb:H, imported_from(M))
    ->  module_property(M, file(File)), display_name(File, _)
    ;   true
    ).

kb_operator(P, T, S) :-
    current_op(P, T, kb:Name),
    \+ current_op(P, T, user:Name),
    atom_string(Name, S).

load_message_dict(_{kind: Kind, file: Name, line: Line, message: Text}) :-
    load_message(Kind, File, Line, Text0),
    shown_file(File, Name),
    split_string(Text0, "", "\n ", [Text]).

shown_file(File, Name) :- display_name(File, Name), !.
shown_file(File, Name) :-                     % a file the KB loaded, named as its KB file is
    display_name(Main, MainName),
    file_directory_name(Main, Dir), atom_concat(Dir, '/', Prefix), atom_concat(Prefix, Rest, File), !,
    file_directory_name(MainName, Shown),
    ( Shown == '.' -> Name = Rest ; atomic_list_concat([Shown, Rest], '/', Name) ).
shown_file(File, File).

predicate_dict(_{name: N, arity: A, clauses: C, file: File, dynamic: Dyn, last_line: Last, tabled: Tab}) :-
    kb_pred(N, A),
    functor(H, N, A),
    ( predicate_property(kb:H, number_of_clauses(C)) -> true ; C = 0 ),
    ( predicate_property(kb:H, file(F)) -> shown_file(F, File) ; File = "" ),
    ( predicate_property(kb:H, dynamic) -> Dyn = true ; Dyn = false ),
    ( predicate_property(kb:H, tabled) -> Tab = true ; Tab = false ),
    (   C > 0, nth_clause(kb:H, C, R), clause_property(R, line_count(Last)) -> true   % the last clause's
    ;   Last = 0 ).

handle("facts", Request, _{facts: Facts}) :-
    Max = Request.per_predicate,
    findall(S, ( kb_pred(N, A), A > 0, functor(H, N, A),
                 limit(Max, clause(kb:H, true)),
                 numbervars(H, 0, _), text(H, S) ),
            Facts).

% --- reading and checking goals -----------------------------------------------------------------
% Goals are read by SWI-Prolog's own reader with the KB's operators and flags (module kb). Each term
% goes back to Python as a flat postfix list, so no reader recurses into its nesting: ["v", Name],
% ["a", Name], ["n", Text] (a number as written), ["s", Text], ["c", Name, Arity] (pops Arity items).

handle("read", Request, _{terms: Terms, error: Error}) :-
    setup_call_cleanup(open_string(Request.text, In), read_all(In, Terms, Error), close(In)).

read_all(In, Terms, Error) :-
    catch(read_term(In, T, [variable_names(Names), module(kb), syntax_errors(error)]), E, true),
    (   nonvar(E) -> Terms = [], syntax_text(E, Error)
    ;   T == end_of_file
    ->  Terms = [],                           % the text's end, or end_of_file. written before it
        read_string(In, _, Rest),
        (   split_string(Rest, "", " \t\r\n", [""]) -> Error = null
        ;   Error = "end_of_file. ends the text before its end: what follows it would be dropped"
        )
    ;   catch(postfix(T, Names, Items), lp_unsupported(Why), true),
        (   nonvar(Why) -> Terms = [], Error = Why
        ;   Terms = [Items|More], read_all(In, More, Error)
        )
    ).

syntax_text(error(syntax_error(What), stream(_, Line, LinePos, _)), Text) :- !,
    message_text(error(syntax_error(What), _), Message0),
    ( sub_string(Message0, 0, _, After, "Syntax error: ") -> sub_string(Message0, _, After, 0, Message) ; Message = Message0 ),
    Column is LinePos + 1,
    format(string(Text), "syntax error at line ~w, column ~w: ~s", [Line, Column, Message]).
syntax_text(E, Text) :- message_text(E, Text).

% postfix(+T, +Names, -Items): each variable named by an attribute (linear in the term: a goal with
% tens of thousands of variables is read in one pass); one the goal left anonymous gets a name _G<n>
% that none of its own variables has.
postfix(T, Names0, Items) :-
    maplist([N=V]>>put_attr(V, lp_name, N), Names0),
    findall(N, member(N=_, Names0), Used0), list_to_ord_set(Used0, Used),
    term_variables(T, Vars),
    foldl(anonymous_name(Used), Vars, 1, _),
    phrase(items(T), Items).

anonymous_name(Used, V, I, I1) :-
    (   get_attr(V, lp_name, _) -> I1 = I
    ;   format(atom(Name), "_G~d", [I]), I2 is I + 1,
        (   ord_memberchk(Name, Used) -> anonymous_name(Used, V, I2, I1)
        ;   put_attr(V, lp_name, Name), I1 = I2
        )
    ).

% What the goal's Python side has no term for is refused, not read as another term.
items(T) --> { var(T) }, !, { get_attr(T, lp_name, N) }, [["v", N]].
items(T) --> { T == '[]' }, !,                    % the atom '[]', not the empty list []
    { throw(lp_unsupported("the atom '[]' is not the empty list []: write [] (or another name)")) }.
items(T) --> { atom(T) }, !, { atom_string(T, S) }, [["a", S]].   % a string: JSON would make true a boolean
items([]) --> !, [["a", "[]"]].                   % not an atom in SWI-Prolog 7, written as one
items(T) --> { string(T) }, !, [["s", T]].
items(T) --> { number(T) }, !, { format(string(S), "~q", [T]) }, [["n", S]].
items(T) --> { is_dict(T) }, !, { throw(lp_unsupported("a dict is not supported in a goal")) }.
items(T) --> { compound_name_arguments(T, F, Args), Args == [] }, !,
    { format(string(Why), "~q() (a compound with no arguments) is not supported in a goal: write ~q", [F, F]),
      throw(lp_unsupported(Why)) }.
items(T) --> { compound_name_arguments(T, F, Args), length(Args, A), atom_string(F, S) },
    item_list(Args), [["c", S, A]].

item_list([]) --> [].
item_list([X|Xs]) --> items(X), item_list(Xs).

% A goal is checked before it runs, by both layers (percepts it brings count as the KB's).
handle("check", Request, Reply) :-
    term_string(Goal, Request.goal),
    findall(N, ( member(S, Request.percepts), atom_string(N, S) ), Percepts),
    setup_call_cleanup(forall(member(N, Percepts), assertz(extra_allowed(N, 1))),
                       ( forall(member(N, Percepts), declare_percept(N)),
                         catch(( checked_body(Goal, _), Reply = _{ok: true} ), E, refusal(E, Reply)) ),
                       retractall(extra_allowed(_, _))).

declare_percept(N) :- current_predicate(kb:N/1), !.
declare_percept(N) :- dynamic(kb:N/1).

% A goal whose rules reach an undefined procedure is not refused before it runs: it runs into the same
% check then, and is unknown (as in plain SWI-Prolog, where the call raises an existence error).
refusal(refused(sandbox, error(existence_error(procedure, _), _)), _{ok: true}) :- !.
refusal(refused(Layer, What), _{ok: false, layer: Layer, reason: Text, predicate: P}) :- !,
    message_text(refused(Layer, What), Text),
    ( Layer == whitelist, What = N/A -> format(string(P), "~w/~w", [N, A]) ; P = null ).
refusal(E, _{ok: false, layer: null, reason: Text, predicate: null}) :-
    message_text(E, Text).

% --- left recursion ---------------------------------------------------------------------------
% A predicate that can call itself again before anything else in its clause ran (p :- p, ... or
% through other predicates' first goals) never ends in plain SWI-Prolog; tabling it makes its answers
% complete and finite. Predicates with a cut are left alone: tabling changes what a cut cuts.

table_left_recursion :-
    forall(( kb_pred(N, A), functor(H, N, A),
             \+ predicate_property(kb:H, number_of_rules(0)),      % facts only: nothing to recurse
             \+ predicate_property(kb:H, tabled), \+ predicate_property(kb:H, dynamic),
             \+ has_cut(H),
             reaches(left_edge, N/A, N/A) ),
           ( table_home(N, A), assertz(auto_tabled(N, A)) )).

% Tables N/A where it is defined: in kb, or in the module of a module KB that kb imports it from
% (tabling kb:N/A there would replace the import with an empty definition).
table_home(N, A) :-
    functor(H, N, A),
    (   predicate_property(kb:H, imported_from(M)) -> table(M:N/A) ; table(kb:N/A) ).

% A recursive predicate that calls an automatically tabled one is tabled too: the tabled predicate's
% answers come in the table's order, not the clauses', so a depth-first recursion over them (such as
% reachable/2 over a symmetric linked/2) could run into a cycle before its first answer.
table_recursive_callers :-
    (   kb_pred(N, A), functor(H, N, A),
        \+ predicate_property(kb:H, number_of_rules(0)),
        \+ predicate_property(kb:H, tabled), \+ predicate_property(kb:H, dynamic),
        \+ has_cut(H),
        call_edge(N/A, M/B), auto_tabled(M, B),
        reaches(call_edge, N/A, N/A)
    ->  table_home(N, A), assertz(auto_tabled(N, A)),
        table_recursive_callers
    ;   true
    ).

% An edge N/A -> M/B: a clause of N/A calls the KB predicate M/B anywhere in its body (call_edge) or
% as its first goal (left_edge).
call_edge(From, To) :- body_edge(sub_goal, From, To).
left_edge(From, To) :- body_edge(first_goal, From, To).

body_edge(Pick, N/A, M/B) :-
    functor(H, N, A),
    clause(kb:H, Body),
    Body \== true,
    call(Pick, Body, G),
    callable(G), \+ G = _:_,
    functor(G, M, B),
    kb_pred(M, B),
    \+ ( Pick == first_goal, shrinking(H, G) ).

% shrinking(+Head, +Call): Call, to Head's own predicate, is on a proper part of one of Head's arguments
% (cnt([_|T], N) :- cnt(T, M), ...): a recursion plain Prolog ends once that argument is bound, so it is
% no left recursion. Tabling it would change its answers: duplicates merged, another order, tables
% stale after an assert, constraints refused.
shrinking(H, G) :-
    functor(H, N, A), functor(G, N, A),
    between(1, A, I), arg(I, H, Part), compound(Part), arg(I, G, Sub),
    sub_term(S, Part), S \== Part, S == Sub, !.

has_cut(H) :- clause(kb:H, Body), sub_goal(Body, G), G == !, !.

sub_goal(V, _) :- var(V), !, fail.
sub_goal(B, B).
sub_goal((A, B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A ; B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A -> B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal((A *-> B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal(\+ A, G) :- sub_goal(A, G).
sub_goal(findall(_, A, _), G) :- sub_goal(A, G).
sub_goal(forall(A, B), G) :- ( sub_goal(A, G) ; sub_goal(B, G) ).
sub_goal(aggregate_all(_, A, _), G) :- sub_goal(A, G).

first_goal(V, _) :- var(V), !, fail.
first_goal((A, _), G) :- !, first_goal(A, G).
first_goal((A ; B), G) :- !, ( first_goal(A, G) ; first_goal(B, G) ).
first_goal((A -> _), G) :- !, first_goal(A, G).
first_goal((A *-> _), G) :- !, first_goal(A, G).
first_goal(\+ A, G) :- !, first_goal(A, G).
first_goal(G, G).

% reaches(+Edge, +From, +To): To is reachable from From over call(Edge, P, Q) steps (breadth first).
reaches(Edge, From, To) :- reaches(Edge, [From], [From], To).

reaches(Edge, [P|Queue], Seen, To) :-
    findall(Q, call(Edge, P, Q), Qs0),
    sort(Qs0, Qs),
    (   memberchk(To, Qs) -> true
    ;   subtract(Qs, Seen, New),
        append(Seen, New, Seen1),
        append(Queue, New, Queue1),
        reaches(Edge, Queue1, Seen1, To)
    ).

% --- the sandbox --------------------------------------------------------------------------------

:- multifile user:term_expansion/2.
user:term_expansion(Term, Expanded) :-
    loading,
    prolog_load_context(source, File), \+ library_file(File),
    (   hook_clause(Term, Hook) -> refuse_hook(Hook), Expanded = [] ; expand_clause(Term, Expanded) ).

expand_clause((Head :- Body), (Head :- Safe)) :- !,
    safe_body(trusted, Body, Safe).
expand_clause((Head --> Body), Clause) :-
    dcg_translate_rule((Head --> Body), (Head1 :- Body1)),
    safe_body(trusted, Body1, Safe),
    Clause = (Head1 :- Safe).

% Clauses the KB's directives asserted while it loaded get the same rewriting as its source clauses.
sandbox_asserted :-
    forall(( kb_pred(N, A), functor(H, N, A), predicate_property(kb:H, dynamic),
             \+ \+ ( clause(kb:H, B), B \== true, safe_body(trusted, B, SafeB), SafeB \== B ) ),
           ( findall(H-B, clause(kb:H, B), Clauses),
             retractall(kb:H),
             forall(member(H1-B1, Clauses),
                    ( safe_body(trusted, B1, SafeB1), assertz(kb:(H1 :- SafeB1)) )) )).

% What a node shows: the term as written, without the sandbox's wrappers. A term is matched against a
% wrapper's shape, never unified with it: unifying would bind a variable of the term (a goal p(a, z, M)
% would read as a rewritten catch/3, M bound to its recovery and z shown as a fresh variable).
unwrap(T, T) :- \+ compound(T), !.
unwrap(T, U) :-                                % (each shape's functor first: subsumes_term/2 walks
    compound_name_arity(T, :, 2),               % the whole term, which made a long list quadratic)
    subsumes_term(user:_, T), T = _:W, compound(W),
    wrapped(W, Inner, Shown), !,                % W's arguments are only bound to wrapped/3's variables
    unwrap(Inner, UInner), Shown = UInner-U0, U = U0.
unwrap(T, U) :-
    compound_name_arity(T, ',', 2), arg(2, T, Note), compound(Note), compound_name_arity(Note, :, 2),
    subsumes_term((_, user:lp_limit_result(_)), T), !, T = (G, _), unwrap(G, U).
unwrap(T, U) :-                                   % a rewritten catch/3 shows its own catcher and recovery
    compound_name_arity(T, Name, 3), arg(3, T, Recover), compound(Recover), compound_name_arity(Recover, :, 2),
    subsumes_term(user:lp_recover(_, _, _), Recover), !,
    T =.. [Name, G, _, user:lp_recover(_, C, R)],
    unwrap(G, UG), unwrap(C, UC), unwrap(R, UR), compound_name_arguments(U, Name, [UG, UC, UR]).
unwrap(T, U) :-
    compound_name_arguments(T, N, Args), maplist(unwrap, Args, UArgs), compound_name_arguments(U, N, UArgs).

% wrapped(+Wrapper, -Inner, -Shown): Inner is what the wrapper holds, Shown = UnwrappedInner-Written.
% Every argument of a head here is a variable, so matching binds none of the wrapper's own.
wrapped(checked(G), G, U-U).
wrapped(lp_closure(C), C, U-U).
wrapped(lp_lambda(_, Params, G), G, U-(Params>>U)).
wrapped(lp_dcg(G), G, U-U).
wrapped(lp_dcg_body(_, _, G), G, U-{U}).
wrapped(lp_colon(G), G, U-U).
wrapped(lp_format(G), G, U-U).
wrapped(safe_assert(How, C, Rest), C, UC-U) :- U =.. [How, UC|Rest].
wrapped(lp_apply(C, Args), C, UC-apply(UC, Args)).
wrapped(lp_tnot(G), G, U-tnot(U)).
wrapped(lp_set_flag(F, V), V, U-set_prolog_flag(F, U)).
wrapped(lp_options(G), G, U-U).
wrapped(lp_global(G), G, U-U).
wrapped(lp_option_goal(_, G), G, U-U).

% --- proving --------------------------------------------------------------------------------

% Each goal runs against the KB as it loaded (with this request's percepts), in a snapshot: what it
% asserts or retracts is undone once its reply is made, so that no goal (no question of a batch, which
% may run in any order and resume) changes another's answer. So are the percepts (which replace the
% KB's own facts of their predicates), the Prolog flags a goal set (prefer_rationals, double_quotes,
% occurs_check, ... change what later goals derive) and the predicates it created (an assert into, or
% a retract from, an undefined predicate defines it, and a later call of it then fails, not errs).
handle("prove", Request0, Reply) :-
    get_time(Now), Deadline is Now + Request0.time,    % one time limit for the search and its trees
    Request = Request0.put(deadline, Deadline),
    term_string(Goal0, Request.goal, [variable_names(Names)]),
    abolish_all_tables,                       % outside the snapshot: tables are no database SWI rolls back
    isolated(( set_percepts(Request.percepts), prove(Request, Goal0, Names, Reply) )).

isolated(Goal) :-
    nb_setval(lp_table_limit, false),
    findall(K-V, ( current_flag(K), flag(K, V, V) ), Counters),
    call_cleanup(snapshot(Goal), ( restore_flags, restore_globals, restore_counters(Counters), abolish_created )).

% flag/3's counters (gensym/2 keeps its numbering in them) as they were before the goal: a counter the
% goal made cannot be removed, but at 0 it reads as one never used (flag/3 starts an unknown key at 0).
restore_counters(Counters) :-
    forall(current_flag(K), ( memberchk(K-V, Counters) -> flag(K, _, V) ; flag(K, _, 0) )).

% A library the KB loads may declare its own global variables safe for library(sandbox) (clpb's
% '$clpb_atoms'): what a goal left in them is set back, as the flags are.
restore_globals :-
    forall(saved_global(G, V), ( V == '$unset' -> nb_delete(G) ; nb_setval(G, V) )).

% sandbox_widening(-Ref): a declaration that makes a builtin (module system) safe for library(sandbox);
% those made before the KB loads are the engine's own.
sandbox_widening(Ref) :- clause(sandbox:safe_primitive(system:_), _, Ref).
sandbox_widening(Ref) :- clause(sandbox:safe_meta(system:_, _), _, Ref).

% The writable flags as the KB left them once loaded (a flag is writable if setting it to its own value
% raises nothing), and the limits SWI-Prolog leaves unset until a goal sets one. They are kept as facts:
% a goal's changes to facts are undone before the flags are set back (a global variable holding them
% could be changed in place by nb_setarg/3, which library(sandbox) allows).
loaded_flag(F, V) :- current_prolog_flag(F, V), catch(set_prolog_flag(F, V), _, fail).

unset_limit(Limit) :- tabling_limit(Limit, _).
unset_limit(max_rational_size).

% The flags a goal set are set back (comparing about a hundred flags costs far less than listing them
% all). A limit that was unset cannot be unset again, but `infinite` lifts it, which removes it.
restore_flags :-
    forall(saved_flag(F, V), ( current_prolog_flag(F, V) -> true ; catch(set_prolog_flag(F, V), _, true) )),
    forall(( unset_limit(F), current_prolog_flag(F, _), \+ saved_flag(F, _) ),
           catch(set_prolog_flag(F, infinite), _, true)).

abolish_created :-
    forall(( kb_mod(M), current_predicate(M:N/A), \+ loaded_pred(M, N, A), \+ tabling_own(N),
             functor(H, N, A), predicate_property(M:H, dynamic), \+ predicate_property(M:H, imported_from(_)) ),
           abolish(M:N/A)).

% The KB's modules, found once it loaded: kb, and each module a file of the KB's defines (not
% SWI-Prolog's libraries).
kb_module(kb).
kb_module(M) :- module_property(M, file(File)), M \== kb, \+ library_file(File).

% Tabling's own predicates, made on a first call ('$wrap$p'/N): abolishing them corrupts SWI's tables.
tabling_own(N) :- sub_atom(N, 0, _, _, '$wrap$').
tabling_own(N) :- sub_atom(N, 0, _, _, '$tbl').
tabling_own(N) :- memberchk(N, ['$tabled', '$table_mode', '$table_update']).

prove(Request, Goal0, Names, Reply) :-
    Max = Request.max_solutions,
    Probe is Max + 1,                         % one more than shown tells whether the list is complete
    Answers = found([]),                      % held by this clause only: no goal can name it
    bounded(Request, ( checked_body(Goal0, Goal),
                       forall(limit(Probe, ( call_delays(kb:Goal, Delays), found(Answers, Goal, Delays) )), true) ),
            Outcome0),
    (   undefined_in_tables -> Outcome = undefined_tabled, Found = []
    ;   Outcome = Outcome0, arg(1, Answers, Reversed), reverse(Reversed, Found)
    ),
    length(Found, Count0),
    (   Outcome \== ok, Count0 > Max                % it fired after --max-solutions cut the search (in a
    ->  Count = 0, Shown = []                        % cleanup handler the cut ran): unknown, not proved
    ;   Count = Count0,
        (   Count > Max -> length(Shown, Max), append(Shown, _, Found) ; Shown = Found )
    ),
    (   Outcome == ok, Count =< Max -> Truncated = false ; Outcome == ok -> Truncated = true
    ;   Count > 0 -> Truncated = true ; Truncated = false ),
    verdict(Outcome, Count, Status, Limit, Reason),
    snapshot(explain(Request, Goal0, Names, Shown, Status, Solutions, Explored)),
    Reply = _{status: Status, proved: Proved, reason: Reason, limit: Limit, truncated: Truncated,
              solutions: Solutions, explored: Explored},
    ( Status == proved -> Proved = true ; Proved = false ).

% A tabled answer the search derived that is neither true nor false (undefined under the well-founded
% semantics, or cut by a tabling answer limit under bounded rationality): an answer only top-level
% delays would show can also reach the goal through findall, \+, forall or an aggregate, which make it
% look definite. Any such answer makes the whole search unknown, with no answer shown.
undefined_in_tables :-
    current_table(_:_, Trie),                 % the KB's modules too
    '$tbl_answer'(Trie, _, Condition), Condition \== true, !.
undefined_in_tables :-                        % a tabling limit whose action drops answers silently
    tabling_limit(Limit, Action), current_prolog_flag(Action, fail), current_prolog_flag(Limit, _),
    current_table(_:_, _), !.
undefined_in_tables :-                        % a rule set a tabling limit while the goal ran (guard.pl)
    nb_current(lp_table_limit, true), current_table(_:_, _), !.

tabling_limit(max_table_answer_size, max_table_answer_size_action).
tabling_limit(max_table_subgoal_size, max_table_subgoal_size_action).
tabling_limit(max_answers_for_subgoal, max_answers_for_subgoal_action).

% An answer counts only while no limit has fired: after one that a catch swallowed, the search is over.
% An answer with delays is undefined under the well-founded semantics (tabled negation through a loop,
% where SWI-Prolog's toplevel says "undefined"): no answer either way.
found(Answers, Answer, Delays) :-
    nb_getval(lp_fired, Fired),
    (   Fired \== none -> throw(Fired)
    ;   Delays \== true -> throw(undefined_wfs)
    ;   arg(1, Answers, Old), nb_setarg(1, Answers, [Answer|Old])   % a copy, kept on backtracking
    ).

% explain(...): a tree per solution shown and, for a failed search, the explored alternatives (on a
% budget of their own). Building them runs the goal's calls again: the caller runs this in a snapshot,
% so that what they assert or retract is undone and the database is as the search left it, as in
% plain SWI-Prolog.
explain(Request, Goal0, Names, Shown, Status, Solutions, Explored) :-
    maplist(explained_solution(Request, Goal0, Names), Shown, Solutions),
    (   Status == failed
    ->  checked_body(Goal0, SafeGoal),
        bounded(Request, explored(SafeGoal, Goal0, Names, Request.depth, Explored), Shown1),
        ( Shown1 == ok -> true ; Explored = null )
    ;   Explored = null
    ).

% verdict(+Outcome, +Answers, -Status, -Limit, -Reason)
verdict(ok, 0, failed, null, null) :- !.
verdict(ok, _, proved, null, null) :- !.
verdict(Outcome, Count, Status, Limit, Reason) :-
    outcome_reason(Outcome, Limit, Text),
    (   Count > 0
    ->  Status = proved, format(string(Reason), "~w after ~d solutions; more may exist", [Text, Count])
    ;   Status = unknown, Reason = Text
    ).

outcome_reason(inference_limit_exceeded, "inferences", "inference limit exceeded") :- !.
outcome_reason(depth_limit_exceeded, "depth", "a depth limit the KB set cut its search short") :- !.
outcome_reason(time_limit_exceeded, "time", "time limit exceeded") :- !.
outcome_reason(error(resource_error(tripwire(Wire, _)), _), null, Text) :- !,   % a tabling limit the KB set
    format(string(Text), "the tabling limit ~w was reached", [Wire]).
outcome_reason(error(resource_error(_), _), "memory", "memory (stack) limit exceeded") :- !.
outcome_reason(failed, null, "the engine failed") :- !.
outcome_reason('$aborted', null, "the goal aborted") :- !.
outcome_reason(undefined_wfs, null, "undefined under the well-founded semantics (tabled negation in a loop)") :- !.
outcome_reason(undefined_tabled, null, "the search used a tabled answer that is neither true nor false (undefined under the well-founded semantics, or cut by a tabling answer limit)") :- !.
outcome_reason(exception(Ball), null, Text) :- !, format(string(Text), "the goal raised ~q", [Ball]).
outcome_reason(Error, null, Text) :- message_text(Error, Text).

% bounded(+Request, :Goal, -Outcome): run Goal once under the request's time and inference limits.
% A limit or refusal that fired (guard.pl's exception hook) decides the outcome even if the goal caught
% it and went on.
bounded(Request, Goal, Outcome) :-
    get_time(Now), Time is max(0.001, Request.deadline - Now),
    nb_setval(lp_fired, none),
    (   catch(call_with_time_limit(Time,
                  call_with_inference_limit(Goal, Request.inferences, Status)),
              Error, true)
    ->  true
    ;   Error = failed
    ),
    nb_getval(lp_fired, Fired),
    nb_setval(lp_fired, off),
    (   Fired \== none -> Outcome = Fired
    ;   Error == ok -> Outcome = exception(ok)        % a goal that throws `ok` did not end the search
    ;   nonvar(Error) -> Outcome = Error
    ;   Status == inference_limit_exceeded -> Outcome = inference_limit_exceeded
    ;   Outcome = ok
    ).

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

% --- explaining ---------------------------------------------------------------------------------
% Trees are built on the sandboxed goal (so they call only what the proof called) and shown unwrapped.
% A tree is bounded in depth (the request's, at most what Python asks) and in nodes (node_budget).

node_budget(2000).

explained_solution(Request, Goal0, Names0, Answer, Solution) :-
    answer_names(Goal0, Names0, Answer, Goal, Names1),
    (   cyclic_term(Names1)
    ->  cyclic_solution(Goal0, Names0, Names1, Solution)
    ;   cut_names(Names1, Names, Note), Note \== none      % too large or too deep to explain: shown cut
    ->  leaf_solution(Goal0, Names0, Names, Note, Solution)
    ;   catch(explained_in_full(Request, Goal, Names1, Solution0), Error, true),
        (   var(Error) -> Solution = Solution0
        ;   message_text(Error, Why),                                     % the answer still stands
            format(string(Note1), "proved by SWI-Prolog; no goal tree: writing it out failed: ~s", [Why]),
            leaf_solution(Goal0, Names0, Names1, Note1, Solution)      % (small: nothing to cut)
        )
    ).

% answer_names(+Goal0, +Names0, +Answer, -Goal, -Names): the goal as it ran (with the sandbox's wrappers,
% as the tree is built on it) and its variables, as the answer bound them. A check that no longer passes
% does not fail the whole request.
answer_names(Goal0, Names0, Answer, Goal, Names) :-
    copy_term(Goal0-Names0, Goal1-Names),
    (   catch(checked_body(Goal1, Goal), _, fail), Goal = Answer
    ->  true
    ;   acyclic_term(Answer), unwrap(Answer, Shown), Goal1 = Shown
    ->  Goal = Answer
    ;   Goal = Answer
    ).

% leaf_solution(+Goal0, +Names0, +Names, +Note, -Solution): the bindings Names (cut to size) and a tree
% of one node, the goal as written, saying why there is no more.
leaf_solution(Goal0, Names0, Names, Note, _{bindings: Bindings, tree: Tree}) :-
    copy_term(Goal0-Names0, Goal-Names2),
    export_tree(Names2, node(Goal, Note, [], true), Tree, _),
    export_tree(Names, node(true, Note, [], true), _, Bindings0),
    dict_pairs(Bindings0, _, Pairs0),
    findall(K-V, ( member(K-V0, Pairs0), uncut_marker(V0, V) ), Pairs),
    dict_pairs(Bindings, _, Pairs).

uncut_marker(Text0, Text) :-
    atomic_list_concat(Parts, '\'$VAR\'(...)', Text0), atomic_list_concat(Parts, '...', Text1),
    atom_string(Text1, Text).

% The tree is built under the goal's limits (what is left of its time, and its inferences) and written
% out after, its size bounded (node_budget nodes, each node_text); an error writing it is the caller's.
explained_in_full(Request, Goal, Names, _{bindings: Bindings, tree: Tree}) :-
    nb_setval(lp_nodes, 0),
    (   bounded(Request, once(explain_root(Goal, Request.depth, Root)), ok)
    ->  true
    ;   Root = node(Goal, "proved by SWI-Prolog; no goal tree: building it hit a limit or an error", [], true)
    ),
    export_tree(Names, Root, Tree, Bindings).

explain_root(Goal, Depth, Root) :-
    (   ex(Goal, Depth, [], Nodes) -> root(Goal, Nodes, true, Root)
    ;   Root = node(Goal, "proved by SWI-Prolog; no loop-free explanation within the depth limit", [], true)
    ).

% A single goal is its own root; a conjunction gets a "query" node over its conjuncts.
root(Goal, [Node], _, Node) :- Goal \= (_, _), !.
root(Goal, Nodes, Proved, node(Goal, query, Nodes, Proved)).

native(G) :- call(kb:G).

spend_node :-
    nb_getval(lp_nodes, N), N1 is N + 1, nb_setval(lp_nodes, N1),
    node_budget(Max), N1 =< Max.

% ex(+Body, +Depth, +Ancestors, -Nodes): a solution of Body (found natively), with the nodes that
% explain it; on backtracking, the next solution.
ex(true, _, _, []) :- !.
ex(!, _, _, []) :- !.
ex((A, B), D, Anc, Nodes) :- !,
    ex(A, D, Anc, N1), ex(B, D, Anc, N2), append(N1, N2, Nodes).
ex((C -> T ; E), D, Anc, Nodes) :- !,
    (   native(C) -> ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes)
    ;   ex(E, D, Anc, Nodes) ).
ex((C *-> T ; E), D, Anc, Nodes) :- !,
    (   native(C) *-> ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes)
    ;   ex(E, D, Anc, Nodes) ).
ex((A ; B), D, Anc, Nodes) :- !,
    ( ex(A, D, Anc, Nodes) ; ex(B, D, Anc, Nodes) ).
ex((C -> T), D, Anc, Nodes) :- !,
    native(C), !, ex_det(C, D, Anc, N1), ex(T, D, Anc, N2), append(N1, N2, Nodes).
ex(\+ G, D, Anc, [node(\+ G, "negation as failure: the negated goal fails", Why, true)]) :- !,
    \+ native(G),
    D1 is D - 1,
    copy_term(G, G1),                         % \+ binds nothing: the search below is on a copy
    why_not(G1, D1, Anc, Why).
ex(user:checked(G), D, Anc, Nodes) :- !,
    checked_body(G, Safe), ex(Safe, D, Anc, Nodes).
ex(user:lp_limit_result(R), _, _, []) :- !,     % the sandbox's note of a KB's own limit: no node of its own
    native(user:lp_limit_result(R)).
ex(kb:G, D, Anc, Nodes) :- !, ex(G, D, Anc, Nodes).
ex(G, D, Anc, Nodes) :-                   % call/N and checked closures: explain the goal they call
    called_goal(G, Called), !,
    ex(Called, D, Anc, Nodes).
ex(G, D, Anc, [Node]) :-
    user_goal(G), !,
    native(G),
    why(G, D, Anc, Node).
ex(G, D, Anc, [node(G, Label, Children, true)]) :-
    native(G),
    builtin_label(G, Label),
    inner_trees(G, D, Anc, Children).

% ex_det(+Body, ...): Body is true as instantiated now; one explanation of it, or a leaf saying none.
ex_det(Body, D, Anc, Nodes) :-
    (   ex(Body, D, Anc, Nodes0) -> Nodes = Nodes0
    ;   Nodes = [node(Body, "proved by SWI-Prolog; no loop-free explanation within the depth limit", [], true)]
    ).

called_goal(call(G), G) :- !.
called_goal(G, Called) :-
    compound(G), compound_name_arguments(G, call, [C|Extra]), Extra \== [], !,
    closure_goal(C, Extra, Called).
called_goal(G, user:checked(Called)) :-
    G = user:Closure, compound(Closure), compound_name_arguments(Closure, lp_closure, [C|Extra]),
    closure_goal(C, Extra, Called).

user_goal(M:G) :- !, module_local(M, G).
user_goal(G) :- callable(G), functor(G, N, A), ( kb_pred(N, A) -> true ; percept_pred(N, A) ).

% A module KB's own predicate that kb does not see (not exported): explained in its module.
module_local(M, G) :-
    atom(M), M \== kb, M \== user, callable(G),          % user: the engine's own wrappers
    predicate_property(M:G, number_of_clauses(_)), \+ predicate_property(M:G, imported_from(_)).

% home_clause(+G, -Body, -Ref): a clause of G whose body names, qualified, the module-local predicates
% of the module it was written in (so that they can be called and explained from kb).
home_clause(G, Body, Ref) :-
    clause(kb:G, Body0, Ref),
    (   clause_property(Ref, module(M)), M \== kb -> qualify(M, Body0, Body) ; Body = Body0 ).

qualify(_, B, B) :- var(B), !.
qualify(M, (A, B), (QA, QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A ; B), (QA ; QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A -> B), (QA -> QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, (A *-> B), (QA *-> QB)) :- !, qualify(M, A, QA), qualify(M, B, QB).
qualify(M, \+ A, \+ QA) :- !, qualify(M, A, QA).
qualify(M, G, M:G) :- module_local(M, G), functor(G, N, A), \+ kb_pred(N, A), !.
qualify(_, G, G).

% why(+G, +D, +Anc, -Node): G (a KB goal, true as instantiated) holds by its first clause whose body
% can be explained without reopening an ancestor; fails if none (so the caller tries another answer).
why(G, _, Anc, _) :- member(A, Anc), A =@= G, !, fail.
why(G, D, _, node(G, "depth limit: not expanded", [], true)) :- D =< 0, !.
why(G, _, _, node(G, "tree size limit: not expanded", [], true)) :- \+ spend_node, !.
why(G, D, Anc, node(G, Label, Children, true)) :-
    D1 is D - 1,
    home_clause(G, Body, Ref),
    ex(Body, D1, [G|Anc], Children), !,
    clause_label(Ref, Label).

% The subtrees under an aggregate or forall: up to five of the inner goal's solutions.
inner_trees(G, D, Anc, Children) :-
    D > 0, inner_goal(G, Inner), !,
    D1 is D - 1,
    findall(Ns, limit(5, ex(Inner, D1, Anc, Ns)), Lists),
    append(Lists, Children).
inner_trees(_, _, _, []).

inner_goal(findall(_, G, _), G).
inner_goal(findall(_, G, _, _), G).
inner_goal(aggregate_all(_, G, _), G).
inner_goal(aggregate_all(_, _, G, _), G).
inner_goal(forall(C, A), (C, A)).
inner_goal(once(G), G).
inner_goal(ignore(G), G).
inner_goal(bagof(_, G, _), G1) :- strip_carets(G, G1).
inner_goal(setof(_, G, _), G1) :- strip_carets(G, G1).

strip_carets(G, G) :- var(G), !.
strip_carets(_^G, I) :- !, strip_carets(G, I).
strip_carets(G, G).

% why_not(+G, +D, +Anc, -Nodes): G fails; the explored alternatives, as for a failed query.
why_not(_, D, _, []) :- D =< 0, !.
why_not(G, D, Anc, Nodes) :-
    (   catch(exp(G, D, Anc, Nodes, _, _), _, fail) -> true ; Nodes = [] ).

% exp(+Body, +D, +Anc, -Nodes, -Proved, -Cut): after a failed proof, the tree that was tried.
% Conjunctions stop at the first failing conjunct; a succeeding conjunct keeps its first solution.
% Cut is true when the body's cut was reached, so later clauses were never tried.
exp(true, _, _, [], true, false) :- !.
exp(!, _, _, [], true, true) :- !.
exp((A, B), D, Anc, Nodes, Proved, Cut) :- !,
    exp(A, D, Anc, N1, P1, C1),
    (   P1 == true
    ->  exp(B, D, Anc, N2, Proved, C2), append(N1, N2, Nodes), ( C1 == true -> Cut = true ; Cut = C2 )
    ;   Nodes = N1, Proved = false, Cut = C1 ).
exp((C -> T ; E), D, Anc, Nodes, Proved, false) :- !,
    (   native(C) -> ex_det(C, D, Anc, N1), exp(T, D, Anc, N2, Proved, _), append(N1, N2, Nodes)
    ;   exp(C, D, Anc, N1, _, _), exp(E, D, Anc, N2, Proved, _), append(N1, N2, Nodes) ).
exp((A ; B), D, Anc, Nodes, Proved, false) :- !,
    exp(A, D, Anc, N1, P1, _),
    (   P1 == true -> Nodes = N1, Proved = true
    ;   exp(B, D, Anc, N2, Proved, _), append(N1, N2, Nodes) ).
exp(\+ G, D, Anc, [Node], Proved, false) :- !,
    D1 is D - 1,
    (   native(G)                             % a failed \+ shows what held (it ends the search)
    ->  ( D1 > 0 -> ex_det(G, D1, Anc, Inner) ; Inner = [] ),
        Node = node(\+ G, "negation as failure: the negated goal holds", Inner, false), Proved = false
    ;   copy_term(G, G1),                     % \+ binds nothing: the search below is on a copy
        why_not(G1, D1, Anc, Why),
        Node = node(\+ G, "negation as failure: the negated goal fails", Why, true), Proved = true ).
exp(user:checked(G), D, Anc, Nodes, Proved, false) :- !,
    checked_body(G, Safe), exp(Safe, D, Anc, Nodes, Proved, _).
exp(user:lp_limit_result(R), _, _, [], Proved, false) :- !,
    ( native(user:lp_limit_result(R)) -> Proved = true ; Proved = false ).
exp(G, D, Anc, Nodes, Proved, false) :-
    (   native(G)
    ->  ex_det(G, D, Anc, Nodes), Proved = true
    ;   user_goal(G)
    ->  explore_goal(G, D, Anc, Node), Nodes = [Node], Proved = false
    ;   builtin_label(G, Label), Nodes = [node(G, Label, [], false)], Proved = false ).

explore_goal(G, _, Anc, node(G, "loop check: a variant of an open goal", [], false)) :-
    member(A, Anc), A =@= G, !.
explore_goal(G, D, _, node(G, "depth limit", [], false)) :- D =< 0, !.
explore_goal(G, _, _, node(G, "tree size limit: not expanded", [], false)) :- \+ spend_node, !.
explore_goal(G, D, Anc, Node) :-
    D1 is D - 1,
    findall(G-Body-Ref, limit(20, home_clause(G, Body, Ref)), Clauses),
    attempts(Clauses, D1, [G|Anc], Attempts),
    (   Attempts = [Node] -> true                         % one clause tried: show it, not a wrapper
    ;   Attempts == [] -> Node = node(G, "no matching clause", [], false)
    ;   Node = node(G, "no clause succeeded", Attempts, false) ).

attempts([], _, _, []).
attempts([G-Body-Ref|More], D, Anc, [node(G, Label, Nodes, false)|Rest]) :-
    clause_label(Ref, Label),
    exp(Body, D, Anc, Nodes, _, Cut),
    (   Cut == true -> Rest = [] ; attempts(More, D, Anc, Rest) ).

explored(SafeGoal, Goal0, Names, Depth, Explored) :-
    nb_setval(lp_nodes, 0),
    exp(SafeGoal, Depth, [], Nodes, _, _),
    root(Goal0, Nodes, false, Root),
    export_tree(Names, Root, Explored, _).

% --- output -------------------------------------------------------------------------------------

% cut_answer(+Term, -Shown, -Note): Term as it can be shown. One at most answer_depth levels deep (a list's
% elements count as one level), with
% at most answer_cells compound cells and answer_chars characters of text, is shown as it is (Note is
% `none`). A larger one is copied down to those bounds, each part left out written `...`, and Note says
% so; a cyclic one is shown as swipl shows it (X = f(X)). The walk is bounded by the same budget, so it
% costs little however large the answer.
answer_depth(200).
answer_cells(20000).
answer_chars(200000).

cut_answer(T, T, none) :-
    small_term(T, 2000), !.
cut_answer(T, Shown, Note) :-
    answer_depth(D), answer_cells(C), answer_chars(L),
    Budget = budget(C, L, 0),
    cut(T, D, Budget, Shown),
    arg(3, Budget, Cuts),
    (   Cuts =:= 0 -> Note = none
    ;   format(string(Note), "proved by SWI-Prolog; the answer is too large to show in full: ~d part(s) left out, each written ... (shown to depth ~d, ~d cells, ~d characters); no goal tree",
               [Cuts, D, C, L])
    ).

% small_term(+T, +Words): T is acyclic, at most Words words on the stack, and holds no atom or string
% longer than 10000 characters (the common case: nothing to cut, and nothing is copied to know it).
small_term(T, Words) :-
    acyclic_term(T), term_size(T, Size), Size =< Words,
    short_texts(T).

short_texts(T) :- var(T), !.
short_texts(T) :- atomic(T), !, ( ( atom(T) ; string(T) ) -> atom_length(T, L), L =< 10000 ; true ).
short_texts(T) :- compound_name_arity(T, _, A), short_args(A, T).

short_args(0, _) :- !.
short_args(I, T) :- arg(I, T, A), short_texts(A), I1 is I - 1, short_args(I1, T).

cut(T, _, _, T) :- var(T), !.
cut(T, _, Budget, Shown) :-
    atomic(T), !,
    (   ( atom(T) ; string(T) ) -> atom_length(T, Len) ; Len = 1 ),
    arg(2, Budget, Left),
    (   Len =< Left -> Left1 is Left - Len, nb_setarg(2, Budget, Left1), Shown = T
    ;   Keep is max(0, min(Left, 1000)), sub_atom(T, 0, Keep, _, Part), atom_concat(Part, '...', Cut0),
        ( string(T) -> atom_string(Cut0, Shown) ; Shown = Cut0 ),
        left_out(Budget), nb_setarg(2, Budget, 0)
    ).
cut(_, D, Budget, Shown) :-
    arg(1, Budget, Cells),
    (   D =< 0 ; Cells =< 0 ), !,
    Shown = '$VAR'('...'), left_out(Budget).
cut(T, D, Budget, Shown) :-
    arg(1, Budget, Cells), Cells1 is Cells - 1, nb_setarg(1, Budget, Cells1),
    compound_name_arity(T, Name, Arity),
    compound_name_arity(Shown, Name, Arity),
    D1 is D - 1,
    (   Name == '[|]', Arity == 2                % a list's tail is no deeper than the list: its length
    ->  arg(1, T, H), cut(H, D1, Budget, SH), arg(1, Shown, SH),      % counts in cells
        arg(2, T, Tail), cut(Tail, D, Budget, ST), arg(2, Shown, ST)
    ;   cut_args(1, Arity, T, D1, Budget, Shown)
    ).

cut_args(I, Arity, _, _, _, _) :- I > Arity, !.
cut_args(I, Arity, T, D, Budget, Shown) :-
    arg(I, T, A), cut(A, D, Budget, S), arg(I, Shown, S),
    I1 is I + 1,
    cut_args(I1, Arity, T, D, Budget, Shown).

% cut_names(+Names, -Shown, -Note): the query's Name=Value pairs with their values cut together, as one
% term whose arguments they are: each name stays, and the list of them stays a list (however many the
% query has), only values are cut.
cut_names(Names, Shown, Note) :-
    pairs_keys_values_eq(Names, Keys, Values),
    Term =.. [v|Values],
    cut_answer(Term, ShownTerm, Note),
    ShownTerm =.. [v|ShownValues],
    pairs_keys_values_eq(Shown, Keys, ShownValues).

pairs_keys_values_eq([], [], []).
pairs_keys_values_eq([K=V|T], [K|Ks], [V|Vs]) :- pairs_keys_values_eq(T, Ks, Vs).

left_out(Budget) :- arg(3, Budget, N), N1 is N + 1, nb_setarg(3, Budget, N1).

% cyclic_solution(+Goal0, +Names, -Solution): an answer that contains itself, shown as swipl's toplevel
% shows it: a cycle through a query variable refers to that variable (X = f(X)); any other cycle is a
% variable _S1, _S2, ... whose value the tree's note gives (swipl's `% where _S1 = ...`).
cyclic_solution(Goal0, Names0, Names1, Solution) :-
    '$factorize_term'(Names1, Skel, Subst),
    maplist(cycle_root(Subst), Skel),
    foldl(cycle_name, Subst, 1, _),
    term_variables(Skel-Subst, Free), foldl(name_fresh, Free, 0, _),
    findall(N-S, ( member(N=V, Skel), \+ sub_atom(N, 0, _, _, '_'),
                   ( V = '$VAR'(N), member(F=Value, Subst), F == V -> text(Value, S) ; text(V, S) ) ),
            Pairs),
    dict_pairs(Bindings, _, Pairs),
    findall(W, ( member('$VAR'(F)=Value, Subst), sub_atom(F, 0, _, _, '_S'), text(Value, T),
                 format(string(W), "~w = ~s", [F, T]) ), Where),
    atomic_list_concat(Where, ', ', WhereText),
    (   Where == [] -> Extra = "" ; format(string(Extra), "; where ~w", [WhereText]) ),
    format(string(Note), "proved by SWI-Prolog; the answer is cyclic (a term that contains itself), shown as swipl shows it~s; no goal tree", [Extra]),
    copy_term(Goal0-Names0, Goal-Names),
    maplist(name_variable, Names), term_variables(Goal, GoalFree), foldl(name_fresh, GoalFree, 0, _),
    node_dict(node(Goal, Note, [], true), Tree),
    Solution = _{bindings: Bindings, tree: Tree}.

cycle_root(Subst, N=V) :- ( var(V), member(F=_, Subst), F == V -> V = '$VAR'(N) ; true ).

cycle_name(F=_, I, I1) :- ( var(F) -> format(atom(N), "_S~d", [I]), F = '$VAR'(N), I1 is I + 1 ; I1 = I ).



% export_tree(+Names, +Root, -Tree, -Bindings): copy, name the query's variables by their written
% names and the rest _A, _B, ..., then render the tree and the named variables' values.
export_tree(Names, Root0, Tree, Bindings) :-
    unwrap(Root0, Root),
    copy_term(Names-Root, Names2-Root2, _),   % without attributes: binding a frozen variable runs nothing
    maplist(name_variable, Names2),
    term_variables(Names2-Root2, Fresh),   % answers first, so their _A, _B.. do not depend on the tree
    foldl(name_fresh, Fresh, 0, _),
    node_dict(Root2, Tree),
    findall(N-S, ( member(N=V, Names2), \+ sub_atom(N, 0, _, _, '_'), text(V, S) ), Pairs),
    dict_pairs(Bindings, _, Pairs).

name_variable(N=V) :- ( var(V) -> V = '$VAR'(N) ; true ).

% Variables an answer leaves free are written _A, _B, ..., _Z, _A1, ... (never like a query variable).
name_fresh('$VAR'(Name), I, I1) :-
    I1 is I + 1,
    Letter is 0'A + I mod 26, Round is I // 26,
    (   Round =:= 0 -> format(atom(Name), "_~c", [Letter]) ; format(atom(Name), "_~c~d", [Letter, Round]) ).

% However the tree was built, what is sent is at most export_depth levels deep (Python reads it).
export_depth(70).   % pydantic reads a record back (a resumed run) up to about 100 node levels

node_dict(Node, Dict) :- node_dict(1, Node, Dict).

node_dict(Level, node(G, Label, Children, Proved), _{goal: S, clause: L, children: Cs, proved: Proved}) :-
    node_text(G, S),
    export_depth(Max),
    (   Level >= Max, Children \== []
    ->  L = "tree depth limit: not expanded", Cs = []
    ;   label_text(Label, L),
        Next is Level + 1,
        maplist(node_dict(Next), Children, Cs)
    ).

label_text(Label, Text) :- string(Label), !, Text = Label.
label_text(Label, Text) :- format(string(Text), "~w", [Label]).

% A node's goal is shown cut to node_cells cells, node_chars characters and node_depth levels (`...`
% for each part left out): a tree has up to node_budget nodes, each of which may hold a large answer.
node_text(G, S) :-                             % the common case, at the cost of writing it once
    acyclic_term(G), term_size(G, Size), Size =< 2000,
    text(G, S), string_length(S, Length), Length =< 10000, !.
node_text(G, S) :-
    Budget = budget(1000, 10000, 0),
    cut(G, 60, Budget, Shown),
    text(Shown, S0),
    (   arg(3, Budget, 0) -> S = S0 ; uncut_marker(S0, S) ).

% Prolog's own quoted writing with the KB's operators: what is printed reads back as the same term.
text(T, S) :-
    format(string(S), "~W", [T, [quoted(true), numbervars(true), spacing(next_argument), module(kb),
                                 portray(false), ignore_ops(false)]]).

clause_label(Ref, Label) :-
    clause_property(Ref, file(F)), clause_property(Ref, line_count(L)), !,
    shown_file(F, Name),
    format(string(Label), "~w:~w", [Name, L]).
clause_label(Ref, "percept") :-
    clause(H, _, Ref), strip_module(H, _, P), functor(P, N, A), percept_pred(N, A), !.
clause_label(_, "asserted").

builtin_label(G, Label) :-
    unwrap(G, U), strip_module(U, _, P), functor(P, N, A), format(string(Label), "~w/~w", [N, A]).
